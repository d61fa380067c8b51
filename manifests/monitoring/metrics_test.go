package monitoring_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// pending are metrics the dashboard and the alerts use before the binaries
// export them (issue 24). Remove each one as it is added; the test fails
// while a pending metric is already exported.
var pending = map[string]bool{}

// PromQL pieces that never name a metric, removed before names are read.
var (
	quoted     = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'` + "|`[^`]*`")
	braces     = regexp.MustCompile(`\{[^}]*\}`)
	brackets   = regexp.MustCompile(`\[[^\]]*\]`)
	grouping   = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	variable   = regexp.MustCompile(`\$\{?\w+\}?`)
	numeric    = regexp.MustCompile(`\b\d[\w.]*`)
	identifier = regexp.MustCompile(`[A-Za-z_:][\w:]*`)
	call       = regexp.MustCompile(`^\s*\(`)
	keywords   = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset", "inf", "nan"}
)

// metricNames returns the metric names a PromQL expression selects:
// identifiers that are not functions, keywords, labels or literals.
func metricNames(expr string) []string {
	for _, re := range []*regexp.Regexp{quoted, braces, brackets, grouping, variable, numeric} {
		expr = re.ReplaceAllString(expr, " ")
	}
	var names []string
	for _, loc := range identifier.FindAllStringIndex(expr, -1) {
		name := expr[loc[0]:loc[1]]
		if call.MatchString(expr[loc[1]:]) || slices.Contains(keywords, strings.ToLower(name)) || slices.Contains(names, name) {
			continue
		}
		names = append(names, name)
	}
	return names
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`sandgate_a`, []string{"sandgate_a"}},
		{`rate(sandgate_a{code="5xx"}[5m])`, []string{"sandgate_a"}},
		{`histogram_quantile(0.99, sum by (le, stage) (rate(sandgate_b_bucket[$__rate_interval])))`, []string{"sandgate_b_bucket"}},
		{`sum by (namespace, node, result) (rate(sandgate_a{result!~"ok|x"}[10m])) / ignoring (result) group_left sum by (namespace, node) (rate(sandgate_a[10m])) > 0.25`, []string{"sandgate_a"}},
		{`sum(sandgate_a) < 1 or absent(sandgate_b)`, []string{"sandgate_a", "sandgate_b"}},
		{`time() - sandgate_a > 9e2`, []string{"sandgate_a"}},
		{`sandgate_a offset 1h30m unless on(pod) sandgate_b{l="{x}"}`, []string{"sandgate_a", "sandgate_b"}},
		{`count by (component, version) (sandgate_build_info)`, []string{"sandgate_build_info"}},
		{`{__name__="x"}`, nil},
	} {
		if got := metricNames(tc.expr); !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(%q) = %q, want %q", tc.expr, got, tc.want)
		}
	}
}

// known reports whether name is exported, directly or as a histogram's or
// summary's series.
func known(exported recorder, name string) bool {
	if exported[name] || pending[name] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && (exported[base] || pending[base]) {
			return true
		}
	}
	return false
}

// dashboardQueries returns every panel's and variable's query.
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"`
	}
	var d struct {
		Panels []panel `json:"panels"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("decode dashboard.json: %v", err)
	}
	queries := map[string]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for i, tg := range p.Targets {
				queries[p.Title+" #"+string(rune('A'+i))] = tg.Expr
			}
			var nested []panel
			for _, raw := range p.Panels {
				var n panel
				if err := json.Unmarshal(raw, &n); err != nil {
					t.Fatalf("decode panel in %q: %v", p.Title, err)
				}
				nested = append(nested, n)
			}
			walk(nested)
		}
	}
	walk(d.Panels)
	if len(queries) == 0 {
		t.Fatal("dashboard.json has no queries")
	}
	return queries
}

// TestQueriesUseExportedMetrics fails when a dashboard query or an alert
// names a metric the binaries do not register, or a pending metric is
// already exported.
func TestQueriesUseExportedMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	queries := dashboardQueries(t)
	rule, _ := readRule(t)
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			queries["alert "+r.Alert] = r.Expr
		}
	}
	used := map[string]bool{}
	for where, expr := range queries {
		names := metricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: no metric in %q", where, expr)
		}
		for _, name := range names {
			used[name] = true
			if !known(exported, name) {
				t.Errorf("%s: %s is not a metric the binaries export", where, name)
			}
		}
	}
	for name := range pending {
		if exported[name] {
			t.Errorf("%s is exported now: remove it from pending", name)
		}
		if !used[name] && !used[name+"_bucket"] {
			t.Errorf("%s is pending but no query uses it", name)
		}
	}
}
