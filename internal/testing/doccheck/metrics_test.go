package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// optsTypes are the client_golang option structs that name a metric.
var optsTypes = []string{"CounterOpts", "GaugeOpts", "HistogramOpts", "SummaryOpts"}

// registeredMetrics reads the metric names the code builds: every
// prometheus.*Opts literal of internal/ and cmd/ outside tests, its Namespace,
// Subsystem and Name joined as client_golang's BuildFQName does (string
// literals or constants of the same file; metricset.New sets the first two).
func registeredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	metrics := map[string]bool{}
	fset := token.NewFileSet()
	for _, path := range repoFiles(t, "tools", "testdata", "bin", "artifacts") {
		rel, _ := filepath.Rel(root, path)
		if !(strings.HasPrefix(rel, "internal/") || strings.HasPrefix(rel, "cmd/")) || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		consts, set := stringConsts(f), setNames(f)
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			sel, ok := lit.Type.(*ast.SelectorExpr)
			if !ok || !slices.Contains(optsTypes, sel.Sel.Name) {
				return true
			}
			if name := optsName(lit, consts, set); name != "" {
				metrics[name] = true
			}
			return true
		})
	}
	return metrics
}

// stringConsts returns the string constants a file declares, at top level
// or in a function.
func stringConsts(f *ast.File) map[string]string {
	consts := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		g, ok := n.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			return true
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, id := range vs.Names {
				if i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						consts[id.Name], _ = strconv.Unquote(lit.Value)
					}
				}
			}
		}
		return true
	})
	return consts
}

var (
	metricName   = regexp.MustCompile(`\bsandgate_([a-z]+)_[a-z0-9_]*[a-z0-9]\b`)
	metricPrefix = regexp.MustCompile("prefix `(sandgate_[a-z_]+_)`\\):?((?:[^\n]|\n[^\n-])*)")
	metricShort  = regexp.MustCompile("`([a-z][a-z0-9_]*)(?:\\{[^}`]*\\})?`")
)

// TestMetricNames: every metric a page names (sandgate_<subsystem>_..., for
// the subsystems the code registers) is one the code builds, a histogram's
// series included; a page that lists a prefix's metrics ("prefix
// `sandgate_authapi_`: `requests_total{route,code}`, ...") lists each of
// them and only them.
func TestMetricNames(t *testing.T) {
	metrics := registeredMetrics(t)
	subsystems := map[string]bool{}
	for m := range metrics {
		subsystems[strings.Split(m, "_")[1]] = true
	}
	if !metrics["sandgate_nodeproxy_requests_total"] || !metrics["sandgate_authapi_requests_total"] {
		t.Fatalf("the metrics read from the code lack the two binaries' request counters: is the reading broken? %v", slices.Sorted(maps.Keys(metrics)))
	}
	checked := 0
	for name, text := range pages(t) {
		for _, m := range metricName.FindAllStringSubmatch(text, -1) {
			if !subsystems[m[1]] {
				continue
			}
			checked++
			if !isMetric(metrics, m[0]) {
				t.Errorf("%s names the metric %s, which the code does not register", name, m[0])
			}
		}
		for _, m := range metricPrefix.FindAllStringSubmatch(text, -1) {
			prefix, listed := m[1], map[string]bool{}
			for _, s := range metricShort.FindAllStringSubmatch(m[2], -1) {
				listed[prefix+s[1]] = true
				checked++
				if !isMetric(metrics, prefix+s[1]) {
					t.Errorf("%s lists %s under the prefix %s; the code does not register %s", name, s[1], prefix, prefix+s[1])
				}
			}
			for metric := range metrics {
				if strings.HasPrefix(metric, prefix) && !listed[metric] {
					t.Errorf("%s lists the metrics of the prefix %s without %s", name, prefix, metric)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no metric name found in the pages: is the pattern broken?")
	}
}

// isMetric reports whether name is a registered metric or one of the
// series of a registered histogram or summary.
func isMetric(metrics map[string]bool, name string) bool {
	if metrics[name] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && metrics[base] {
			return true
		}
	}
	return false
}
