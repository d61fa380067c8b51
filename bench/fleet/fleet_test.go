package fleet

import (
	"log/slog"
	"testing"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestRun measures two small fleets on a real API server: every change
// reaches every cache, and each figure is there.
func TestRun(t *testing.T) {
	cp := testkit.ControlPlane(t)
	rows, err := Run(t.Context(), cp.AdminConfig(), Options{Sizes: []int{1, 3}, Users: 20, Changes: 5, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	for _, r := range rows {
		if r.Ready <= 0 || r.Reach.P50 <= 0 || r.Reach.Max < r.Reach.P99 || r.Reach.P99 < r.Reach.P50 || r.APIRSS <= 0 {
			t.Errorf("row %+v", r)
		}
		// Each cache watches claims: a change is one event to each.
		if r.EventsPerChange < float64(r.Nodes) {
			t.Errorf("%d nodes: %.1f claim events per change, want at least one per cache", r.Nodes, r.EventsPerChange)
		}
		if r.Watches != float64(4*r.Nodes) {
			t.Errorf("%d nodes: %.0f more watches, want four per cache (claims, Sandboxes, pods, nodes)", r.Nodes, r.Watches)
		}
	}
}

func TestSample(t *testing.T) {
	for _, tc := range []struct {
		line, name, labels string
		value              float64
		ok                 bool
	}{
		{"process_cpu_seconds_total 12.5", "process_cpu_seconds_total", "", 12.5, true},
		{`apiserver_longrunning_requests{resource="pods",verb="WATCH"} 3`, "apiserver_longrunning_requests", `resource="pods",verb="WATCH"`, 3, true},
		{`a{b="c d"} 1e+08 1700000000`, "a", `b="c d"`, 1e8, true},
		{"# HELP x y", "", "", 0, false},
		{"x", "", "", 0, false},
		{`x{b="c"`, "", "", 0, false},
		{"x NaNa", "x", "", 0, false},
	} {
		name, labels, value, ok := sample(tc.line)
		if ok != tc.ok || (ok && (name != tc.name || labels != tc.labels || value != tc.value)) {
			t.Errorf("sample(%q) = %q %q %v %v", tc.line, name, labels, value, ok)
		}
	}
}

func FuzzSample(f *testing.F) {
	f.Add(`apiserver_watch_events_total{kind="SandboxClaim"} 7`)
	f.Add("}{ 1")
	f.Fuzz(func(t *testing.T, line string) {
		name, labels, _, ok := sample(line)
		if ok && len(name)+len(labels) > len(line) {
			t.Errorf("sample(%q) made up %q %q", line, name, labels)
		}
	})
}
