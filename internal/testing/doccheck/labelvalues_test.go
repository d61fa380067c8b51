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

	"github.com/sandgate/sandgate/internal/metricset"
)

// labelValues reads, for each counter vector the code makes with
// metricset.Set.CounterVec and its series created up front, the values of
// its first label: the series argument is metricset.Each(values...) or a
// call whose first argument is a package variable holding a []string
// literal (withSource(allResults, source)); values are string literals or
// string constants of the package. It returns them by metric name and
// label.
func labelValues(t *testing.T) map[string]map[string][]string {
	t.Helper()
	out := map[string]map[string][]string{}
	fset := token.NewFileSet()
	byDir := map[string][]*ast.File{}
	for _, path := range repoFiles(t, "tools", "testdata", "bin", "artifacts") {
		rel, _ := filepath.Rel(root, path)
		if !strings.HasPrefix(rel, "internal/") || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		byDir[filepath.Dir(path)] = append(byDir[filepath.Dir(path)], f)
	}
	for _, files := range byDir {
		consts, lists := map[string]string{}, map[string]*ast.CompositeLit{}
		for _, f := range files {
			for k, v := range stringConsts(f) {
				consts[k] = v
			}
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.VAR {
					continue
				}
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, id := range vs.Names {
						if i < len(vs.Values) {
							if lit, ok := vs.Values[i].(*ast.CompositeLit); ok {
								lists[id.Name] = lit
							}
						}
					}
				}
			}
		}
		str := func(e ast.Expr) (string, bool) {
			switch v := e.(type) {
			case *ast.BasicLit:
				s, err := strconv.Unquote(v.Value)
				return s, err == nil
			case *ast.Ident:
				s, ok := consts[v.Name]
				return s, ok
			}
			return "", false
		}
		strs := func(exprs []ast.Expr) []string {
			var values []string
			for _, e := range exprs {
				if s, ok := str(e); ok {
					values = append(values, s)
				}
			}
			return values
		}
		for _, f := range files {
			fileConsts, set := stringConsts(f), setNames(f)
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) != 3 || !call.Ellipsis.IsValid() {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "CounterVec" {
					return true
				}
				name := optsName(call.Args[0], fileConsts, set)
				labels, ok := call.Args[1].(*ast.CompositeLit)
				series, ok2 := call.Args[2].(*ast.CallExpr)
				if name == "" || !ok || !ok2 || len(labels.Elts) == 0 || len(series.Args) == 0 {
					return true
				}
				label, ok := str(labels.Elts[0])
				if !ok {
					return true
				}
				var values []string
				if sel, ok := series.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Each" {
					values = strs(series.Args)
				} else if id, ok := series.Args[0].(*ast.Ident); ok && lists[id.Name] != nil {
					values = strs(lists[id.Name].Elts)
				}
				if len(values) > 0 {
					if out[name] == nil {
						out[name] = map[string][]string{}
					}
					out[name][label] = values
				}
				return true
			})
		}
	}
	return out
}

// optsName returns the metric name a prometheus.*Opts literal builds, ""
// when it is not one; set holds the Namespace and Subsystem that
// metricset sets in the file.
func optsName(e ast.Expr, consts, set map[string]string) string {
	lit, ok := e.(*ast.CompositeLit)
	if !ok {
		return ""
	}
	parts := maps.Clone(set)
	for _, el := range lit.Elts {
		kv, ok := el.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		key, ok := kv.Key.(*ast.Ident)
		if !ok {
			continue
		}
		switch v := kv.Value.(type) {
		case *ast.BasicLit:
			parts[key.Name], _ = strconv.Unquote(v.Value)
		case *ast.Ident:
			parts[key.Name] = consts[v.Name]
		}
	}
	if parts["Name"] == "" {
		return ""
	}
	var name []string
	for _, k := range []string{"Namespace", "Subsystem", "Name"} {
		if parts[k] != "" {
			name = append(name, parts[k])
		}
	}
	return strings.Join(name, "_")
}

// setNames returns the Namespace and Subsystem a metricset.New("x") call of
// f gives the metrics it makes, none when f makes no Set.
func setNames(f *ast.File) map[string]string {
	names := map[string]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 1 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "New" {
			return true
		}
		pkg, ok := sel.X.(*ast.Ident)
		lit, ok2 := call.Args[0].(*ast.BasicLit)
		if ok && ok2 && pkg.Name == "metricset" && lit.Kind == token.STRING {
			names["Namespace"] = metricset.Namespace
			names["Subsystem"], _ = strconv.Unquote(lit.Value)
		}
		return true
	})
	return names
}

var metricRow = regexp.MustCompile("^\\| `(sandgate_[a-z0-9_]+)` \\| ([^|]*) \\| (.*) \\|$")

// TestMetricLabelValues: a table row of a page that names a metric, its
// labels and its meaning ("| `sandgate_handshake_total` | `result`,
// `source` | handshakes by outcome: `ok`, ... |"), for a metric whose first
// label's values the code fixes up front, lists every one of those values
// in backticks in the meaning, and no other backticked word.
func TestMetricLabelValues(t *testing.T) {
	values := labelValues(t)
	if len(values["sandgate_handshake_total"]["result"]) < 5 {
		t.Fatalf("the result values of sandgate_handshake_total were not read from the code: is the reading broken? %v", values)
	}
	checked := 0
	for page, text := range pages(t) {
		for _, line := range strings.Split(text, "\n") {
			m := metricRow.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			byLabel := values[m[1]]
			var labels []string
			for _, l := range backticked.FindAllStringSubmatch(m[2], -1) {
				labels = append(labels, l[1])
			}
			if len(labels) == 0 || byLabel[labels[0]] == nil {
				continue
			}
			want := byLabel[labels[0]]
			var listed []string
			for _, v := range backticked.FindAllStringSubmatch(m[3], -1) {
				listed = append(listed, v[1])
			}
			checked++
			for _, v := range want {
				if !slices.Contains(listed, v) {
					t.Errorf("%s: %s: the meaning lists the %s values %v without %q, which the code defines", page, m[1], labels[0], listed, v)
				}
			}
			for _, v := range listed {
				if !slices.Contains(want, v) {
					t.Errorf("%s: %s: the meaning lists %q, which is no %s value the code defines (%v)", page, m[1], v, labels[0], want)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no metric row with label values found in the pages: is the pattern broken?")
	}
}
