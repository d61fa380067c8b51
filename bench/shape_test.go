package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/bench/load"
	"github.com/sandgate/sandgate/bench/scale"
)

// wholeSmoke returns results with every figure a smoke run measures.
func wholeSmoke(c config) *results {
	run := func(a app, cl cell) httpRun {
		h := httpRun{App: a.Name, cell: cl, CPU: map[string]time.Duration{},
			Result: load.Result{Requests: 10, Total: 12, RPS: 100, Latency: load.Latency{N: 10, P50: time.Millisecond, P99: 2 * time.Millisecond}}}
		for _, role := range servedBy[cl.Way] {
			h.CPU[role] = 10 * time.Microsecond
		}
		if cl.Way == viaProxy || cl.Way == viaHop {
			h.Logged = &perRequest{Lines: 0.001, Bytes: 0.2}
		}
		return h
	}
	r := &results{Profile: "top", BareProfile: "top", IdleHeap: "top", HalfProfile: "top", HopProfiles: []string{"top", "top"},
		Gap: &cpuGap{Proxy: cpuSplit{PerRequest: 40 * time.Microsecond, Syscalls: 0.5}, Bare: cpuSplit{PerRequest: 30 * time.Microsecond, Syscalls: 0.7}}}
	for _, a := range apps {
		for _, cl := range plan(a, c) {
			r.HTTP = append(r.HTTP, run(a, cl))
		}
	}
	r.Half = []httpRun{run(fastApp, cell{direct, 1 << 10, 64}), run(fastApp, cell{viaProxy, 1 << 10, 64})}
	for i := range r.Half {
		r.Half[i].Result.Lag = load.Latency{N: 10, P50: time.Microsecond, P99: time.Millisecond}
	}
	r.SplitPeak = []httpRun{run(fastApp, cell{viaProxy, 1 << 10, 64})}
	for _, w := range splitWays {
		h := run(fastApp, cell{w, 1 << 10, 64})
		h.Result.Lag = load.Latency{N: 10, P50: time.Microsecond, P99: time.Millisecond}
		r.HalfSplit = append(r.HalfSplit, h)
	}
	if c.profile != "" {
		r.HalfTrace = &halfTrace{Run: r.Half[1], File: "proxy-half.trace", Sched: "top"}
	}
	for _, w := range []way{direct, viaProxy} {
		r.SSE = append(r.SSE, wayLatency{w, load.Latency{N: c.sseEvents, P50: time.Millisecond}})
		r.WSEcho = append(r.WSEcho, wayLatency{w, load.Latency{N: echoMessages, P50: time.Millisecond}})
	}
	r.Idle = idleResult{Wanted: c.wsIdle, Open: c.wsIdle, Before: proxyMemory{RSS: 1}, After: proxyMemory{RSS: 2}}
	r.Idle.After.Goroutines = 2 * c.wsIdle
	r.Sessions = sessionFigures{benchFigure{NsPerOp: 1}, benchFigure{NsPerOp: 1}, benchFigure{NsPerOp: 1}}
	fig := func(users, pods int) scale.Result {
		return scale.Result{Users: users, Pods: pods, Sync: time.Millisecond, BaseRSS: 1, RSS: 2, Lookup: time.Microsecond}
	}
	for _, n := range c.scaleUsers {
		r.Scale = append(r.Scale, fig(n, n/scale.Nodes))
	}
	for _, n := range c.growthPods {
		r.Growth = append(r.Growth, fig(n, n))
	}
	return r
}

func TestCheckShapePassesWholeResults(t *testing.T) {
	c := config{smoke: true}.smoked()
	if err := checkShape(c, wholeSmoke(c), "slog.(*Logger).Info, informer.Index"); err != nil {
		t.Errorf("checkShape: %v", err)
	}
}

func TestTraefikWayInTheShape(t *testing.T) {
	c := config{smoke: true, traefik: "traefik"}.smoked()
	r := wholeSmoke(c)
	if err := checkShape(c, r, ""); err != nil {
		t.Fatalf("checkShape with (e): %v", err)
	}
	var kept []httpRun
	for _, h := range r.HTTP {
		if h.Way != viaTraefik {
			kept = append(kept, h)
		}
	}
	if len(kept) == len(r.HTTP) {
		t.Fatal("the plan has no (e) cell with -traefik set")
	}
	r.HTTP = kept
	if err := checkShape(c, r, ""); err == nil || !strings.Contains(err.Error(), "traefik 1024B x64: 0 rounds") {
		t.Errorf("checkShape without (e)'s runs = %v, want its missing rounds named", err)
	}
	if report := render(c, wholeSmoke(c)); !strings.Contains(report, "| (e) Traefik |") || !strings.Contains(report, "CPU b/e") {
		t.Error("the report has no (e) row or no ratio against it")
	}
}

func TestCheckShapeFindsGaps(t *testing.T) {
	c := config{smoke: true, profile: "dir"}.smoked()
	for _, tc := range []struct {
		name  string
		spoil func(r *results) string
		want  string
	}{
		{"missing run", func(r *results) string { r.HTTP = r.HTTP[1:]; return "" }, "0 rounds, want 1"},
		{"errors", func(r *results) string { r.HTTP[0].Result.Errors = 3; return "" }, "3 errors"},
		{"no requests", func(r *results) string { r.HTTP[1].Result.Requests = 0; return "" }, "0 requests"},
		{"no proxy CPU", func(r *results) string {
			for i := range r.HTTP {
				if r.HTTP[i].Way == viaCrowd {
					delete(r.HTTP[i].CPU, "crowd")
				}
			}
			return ""
		}, "no CPU time read for the crowd"},
		{"short SSE", func(r *results) string { r.SSE[1].Latency.N = 3; return "" }, "SSE proxy: 3 samples"},
		{"no idle sockets", func(r *results) string { r.Idle.Open = 0; return "" }, "idle WebSockets"},
		{"growth row missing", func(r *results) string { r.Growth = r.Growth[:1]; return "" }, "growth: 1 rows, want 2"},
		{"pods not counted", func(r *results) string { r.Scale[0].Pods = 0; return "" }, "scale 1000 users"},
		{"no profile", func(r *results) string { r.Profile = ""; return "" }, "profiles"},
		{"no generator lag", func(r *results) string { r.Half[0].Result.Lag.N = 0; return "" }, "generator lag of 0 requests"},
		{"no trace", func(r *results) string { r.HalfTrace = nil; return "" }, "no traced run"},
		{"no hop profile", func(r *results) string { r.HopProfiles = nil; return "" }, "two proxies' CPU profiles"},
		{"split round missing", func(r *results) string { r.HalfSplit = r.HalfSplit[1:]; return "" }, "split layout: 1 peak and 3 half-load runs"},
		{"no bare profile", func(r *results) string { r.BareProfile = ""; return "" }, "profiles: CPU 3 and 0 bytes"},
		{"no gap", func(r *results) string { r.Gap.Bare.Syscalls = 0; return "" }, "the CPU gap of (b) and (d)"},
		{"split lag missing", func(r *results) string { r.HalfSplit[2].Result.Lag.N = 0; return "" }, "split half load proxy, GOMAXPROCS=2: generator lag"},
		{"log not counted", func(r *results) string {
			for i := range r.HTTP {
				r.HTTP[i].Logged = nil
			}
			return ""
		}, "log output was not counted"},
		{"NaN printed", func(*results) string { return "| NaN |" }, "prints NaN"},
		{"Inf printed", func(*results) string { return "ratio +Inf" }, "prints +Inf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := wholeSmoke(c)
			report := tc.spoil(r)
			err := checkShape(c, r, report)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("checkShape = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
