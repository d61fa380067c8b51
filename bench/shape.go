package main

import (
	"errors"
	"fmt"
	"regexp"
	"slices"

	"github.com/sandgate/sandgate/bench/scale"
)

// checkShape reports every figure a run of c should have measured and
// did not: a missing or failed load run, a server on the way that used no
// CPU, a stream without its messages, a table without its rows, a
// profile not taken, and a report that printed NaN or Inf. It checks
// shape, not speed.
func checkShape(c config, res *results, report string) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, a := range apps {
		for _, cl := range plan(a, c) {
			rs := res.runs(a, cl)
			if len(rs) != c.rounds {
				bad("%s %s %dB x%d: %d rounds, want %d", a.Name, cl.Way, cl.Size, cl.Conns, len(rs), c.rounds)
			}
			for _, h := range rs {
				errs = append(errs, checkRun(h)...)
				if (cl.Way == viaProxy || cl.Way == viaHop) && h.Logged == nil {
					bad("%s %s %dB x%d: the proxy's log output was not counted", a.Name, cl.Way, cl.Size, cl.Conns)
				}
			}
		}
	}
	if len(res.Half) != 2*c.rounds {
		bad("half load: %d runs, want %d", len(res.Half), 2*c.rounds)
	}
	for _, h := range res.Half {
		errs = append(errs, checkRun(h)...)
		if h.Result.Lag.N != h.Result.Requests {
			bad("half load %s: generator lag of %d requests, want %d", h.Way, h.Result.Lag.N, h.Result.Requests)
		}
	}
	if len(res.SplitPeak) != c.rounds || len(res.HalfSplit) != len(splitWays)*c.rounds {
		bad("split layout: %d peak and %d half-load runs, want %d and %d", len(res.SplitPeak), len(res.HalfSplit), c.rounds, len(splitWays)*c.rounds)
	}
	for _, h := range append(slices.Clip(res.SplitPeak), res.HalfSplit...) {
		errs = append(errs, checkRun(h)...)
	}
	for _, h := range res.HalfSplit {
		if h.Result.Lag.N != h.Result.Requests {
			bad("split half load %s: generator lag of %d requests, want %d", h.Way, h.Result.Lag.N, h.Result.Requests)
		}
	}
	if c.profile != "" {
		if len(res.HopProfiles) != 2 || res.HopProfiles[0] == "" || res.HopProfiles[1] == "" {
			bad("hop: the two proxies' CPU profiles are missing")
		}
		if t := res.HalfTrace; t == nil || t.Sched == "" || res.HalfProfile == "" {
			bad("half load: no traced run, its scheduler profile or the CPU profile is empty")
		} else {
			errs = append(errs, checkRun(t.Run)...)
		}
	}
	for _, s := range []struct {
		name string
		got  []wayLatency
		n    int
	}{{"SSE", res.SSE, c.sseEvents}, {"WebSocket echo", res.WSEcho, echoMessages}} {
		if len(s.got) != 2 {
			bad("%s: %d ways, want direct and proxy", s.name, len(s.got))
		}
		for _, l := range s.got {
			if l.Latency.N != s.n || l.Latency.P50 <= 0 {
				bad("%s %s: %d samples (p50 %s), want %d", s.name, l.Way, l.Latency.N, l.Latency.P50, s.n)
			}
		}
	}
	if i := res.Idle; i.Open == 0 || i.Open != i.Wanted || i.After.Goroutines <= i.Before.Goroutines || i.After.RSS <= 0 {
		bad("idle WebSockets: %d of %d open (%s), goroutines %d -> %d, RSS %d", i.Open, i.Wanted, i.Err, i.Before.Goroutines, i.After.Goroutines, i.After.RSS)
	}
	for name, f := range map[string]benchFigure{"uncached verify": res.Sessions.VerifyUncached, "cached verify": res.Sessions.VerifyCached, "bearer": res.Sessions.Bearer} {
		if f.NsPerOp <= 0 {
			bad("sessions %s: %v ns/op", name, f.NsPerOp)
		}
	}
	errs = append(errs, checkScale("scale", res.Scale, c.scaleUsers, false)...)
	errs = append(errs, checkScale("growth", res.Growth, c.growthPods, true)...)
	if c.lifecycle && (res.Lifecycle == nil || res.Lifecycle.Signup.N+res.Lifecycle.Answered.N == 0 || res.Lifecycle.WakeOverhead.N == 0) {
		bad("lifecycle: no figures (%s)", res.LifecycleErr)
	}
	if c.profile != "" && (res.Profile == "" || res.BareProfile == "" || res.IdleHeap == "") {
		bad("profiles: CPU %d and %d bytes, heap %d bytes of pprof output", len(res.Profile), len(res.BareProfile), len(res.IdleHeap))
	}
	if g := res.Gap; c.profile != "" && (g == nil || g.Proxy.PerRequest <= 0 || g.Bare.PerRequest <= 0 || g.Proxy.Syscalls <= 0 || g.Bare.Syscalls <= 0) {
		bad("the CPU gap of (b) and (d): %+v", g)
	}
	if m := notANumber.FindString(report); m != "" {
		bad("the report prints %s", m)
	}
	return errors.Join(errs...)
}

// notANumber matches how fmt prints a NaN or an infinite float.
var notANumber = regexp.MustCompile(`\bNaN\b|[+-]Inf\b`)

// checkRun reports what one load run lacks.
func checkRun(h httpRun) []error {
	var errs []error
	name := fmt.Sprintf("%s %s %dB x%d", h.App, h.Way, h.Size, h.Conns)
	if r := h.Result; r.Requests == 0 || r.RPS <= 0 || r.Latency.N == 0 || r.Latency.P50 <= 0 || r.Errors > 0 {
		errs = append(errs, fmt.Errorf("%s: %d requests, %d errors (%s), p50 %s", name, r.Requests, r.Errors, r.FirstError, r.Latency.P50))
	}
	for _, role := range servedBy[h.Way] {
		if h.CPU[role] <= 0 {
			errs = append(errs, fmt.Errorf("%s: no CPU time read for the %s", name, role))
		}
	}
	return errs
}

// checkScale reports a scale table that lacks a row for each of want or
// a figure in one; allLocal says every pod is on the proxy's node.
func checkScale(table string, got []scale.Result, want []int, allLocal bool) []error {
	var errs []error
	if len(got) != len(want) {
		errs = append(errs, fmt.Errorf("%s: %d rows, want %d", table, len(got), len(want)))
	}
	for _, r := range got {
		if r.Pods <= 0 || (allLocal && r.Pods != r.Users) || r.Sync <= 0 || r.Lookup <= 0 || r.BaseRSS <= 0 || r.RSS <= 0 {
			errs = append(errs, fmt.Errorf("%s %d users: %+v", table, r.Users, r))
		}
	}
	return errs
}
