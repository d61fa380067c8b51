package fleet

import (
	"log/slog"
	"testing"
	"time"

	"github.com/sandgate/sandgate/bench/load"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestRun measures two small fleets on a real API server: every change
// reaches every cache, and each figure is there.
func TestRun(t *testing.T) {
	cp := testkit.ControlPlane(t)
	churn := Churn{Signups: 5, Logouts: 5, Suspends: 5, Wakes: 5}
	rows, err := Run(t.Context(), cp.AdminConfig(), Options{Sizes: []int{1, 3}, Users: 20, Changes: 5, Churn: churn, ChurnFor: time.Second, Logger: slog.New(slog.DiscardHandler)})
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
		for name, l := range map[string]load.Latency{"churned logout": r.ChurnedLogout, "suspend": r.Suspend, "wake": r.Wake} {
			if l.N != 5 || l.P50 <= 0 || l.Max < l.P50 {
				t.Errorf("%d nodes: %s reach %+v, want 5 changes", r.Nodes, name, l)
			}
		}
		if r.ChurnRate < 15 || r.ChurnCores <= 0 || r.Leader <= 0 {
			t.Errorf("%d nodes: churn %.1f/s, API cores %.2f, leader %v", r.Nodes, r.ChurnRate, r.ChurnCores, r.Leader)
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

func TestParseChurn(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Churn
		ok   bool
	}{
		{"signups=1,logouts=2,suspends=5,wakes=5", Churn{1, 2, 5, 5}, true},
		{" wakes = 0.5 ", Churn{Wakes: 0.5}, true},
		{"", Churn{}, true},
		{"logouts=2,logouts=3", Churn{}, false},
		{"logins=2", Churn{}, false},
		{"suspends", Churn{}, false},
		{"suspends=-1", Churn{}, false},
		{"suspends=NaN", Churn{}, false},
		{"wakes=1e9", Churn{}, false},
	} {
		got, err := ParseChurn(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseChurn(%q) = %+v, %v", tc.in, got, err)
		}
		if err == nil {
			if back, err := ParseChurn(got.String()); err != nil || back != got {
				t.Errorf("ParseChurn(%q.String()) = %+v, %v", tc.in, back, err)
			}
		}
	}
}
