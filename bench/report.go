package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/sandgate/sandgate/bench/lifecycle"
)

// target is one stated goal and whether this run met it.
type target struct {
	what, measured string
	met            bool
}

// render formats the results as RESULTS.md.
func render(c config, r *results) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# sandgate benchmark results\n\n")
	p("Written by `make bench` (`%s`) on %s; the whole run took %s.\n\n",
		strings.Join(os.Args, " "), r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Took.Round(time.Second))
	p("## Machine\n\n%s\n", machine())
	p("Pinning: the bench runs every part as a child process of its own binary. The app, both node proxies " +
		"and the baseline proxy run under `taskset -c 0` with GOMAXPROCS=1; every load generator and client " +
		"runs under `taskset -c 1` with GOMAXPROCS=1. So the servers of each way share one core and the load " +
		"generator never takes the proxy's CPU; (a) is the app alone on that core, (b) and (c) are proxy plus app on it. " +
		"Other work on this shared machine still adds noise: compare ratios from the same run.\n\n")

	p("## Targets\n\n| target | measured | met |\n|---|---|---|\n")
	for _, t := range targets(r) {
		met := "**not met**"
		if t.met {
			met = "met"
		}
		p("| %s | %s | %s |\n", t.what, t.measured, met)
	}

	p("\n## 1. HTTP data path\n\nClosed loop, %s measured after %s warm-up, every response checked; each cell ran in %d interleaved rounds "+
		"and shows its best (the round least disturbed by other work on the machine). "+
		"(a) the app directly, (b) one node proxy with the full path (JWT cookie, informer resolve, in-flight slot, "+
		"activity tracking, header policy, handshake cookie, metrics, JSON access log to io.Discard), "+
		"(c) net/http with httputil.ReverseProxy.\n\n", c.duration, c.warmup, matrixRounds)
	p("| body | conns | (a) req/s | p50 | p99 | (b) req/s | p50 | p99 | (c) req/s | p50 | p99 | b/a | b/c |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, size := range []int{1 << 10, 64 << 10} {
		for _, conns := range []int{1, 16, 64} {
			a, bb, cc := r.find(direct, size, conns).Result, r.find(viaProxy, size, conns).Result, r.find(viaBase, size, conns).Result
			p("| %s | %d | %.0f | %s | %s | %.0f | %s | %s | %.0f | %s | %s | %.2f | %.2f |\n", kib(size), conns,
				a.RPS, ms(a.Latency.P50), ms(a.Latency.P99), bb.RPS, ms(bb.Latency.P50), ms(bb.Latency.P99),
				cc.RPS, ms(cc.Latency.P50), ms(cc.Latency.P99), ratio(bb.RPS, a.RPS), ratio(bb.RPS, cc.RPS))
		}
	}
	p("\nCPU time per request of each server process (user + system from /proc/<pid>/stat over the run, warm-up included; " +
		"10 ms ticks), the cost that decides the ratios when the servers share one core:\n\n")
	p("| body | conns | (a) app | (b) proxy + app | (c) baseline + app | proxy / baseline |\n|---|---|---|---|---|---|\n")
	for _, size := range []int{1 << 10, 64 << 10} {
		for _, conns := range []int{1, 16, 64} {
			a, bb, cc := r.find(direct, size, conns).CPU, r.find(viaProxy, size, conns).CPU, r.find(viaBase, size, conns).CPU
			p("| %s | %d | %s | %s + %s | %s + %s | %.2f |\n", kib(size), conns, us(a["app"]), us(bb["proxy"]), us(bb["app"]),
				us(cc["baseline"]), us(cc["app"]), ratio(float64(bb["proxy"]), float64(cc["baseline"])))
		}
	}
	if x, pc, xc, cc := r.find(viaProxy, 1<<10, 64).CPU["app"], r.find(viaProxy, 1<<10, 64).CPU["proxy"],
		r.find(viaBase, 1<<10, 64).CPU["app"], r.find(viaBase, 1<<10, 64).CPU["baseline"]; x > 0 && xc > 0 {
		// With app and proxy sharing a core, (b)/(a) ~ X/(X+P) and
		// (b)/(c) ~ (X+C)/(X+P): the proxy CPU that would meet each target.
		forA := time.Duration(float64(x) * (1/0.35 - 1))
		forC := (xc+cc)/3 - x
		p("\nAt 64 connections and 1 KiB, with the servers sharing a core, (b)/(a) ~ X/(X+P) and (b)/(c) ~ (X+C)/(X+P) "+
			"(X app, P proxy, C baseline CPU per request). (b)/(a) >= 0.35 needs P <= 1.86 X = %s and (b)/(c) >= 3 needs P <= (X+C)/3 - X = %s; "+
			"the proxy now takes %s.\n", us(forA), us(forC), us(pc))
	}
	p("\nHalf of (b)'s peak (64 connections, 1 KiB), paced open loop (latency counts from each request's scheduled time), "+
		"%d alternating rounds; the target compares each way's best (lowest) p99.\n\n", halfRounds)
	p("| round | way | rate req/s | achieved req/s | p50 | p99 |\n|---|---|---|---|---|---|\n")
	for i, h := range r.Half {
		p("| %d | %s | %.0f | %.0f | %s | %s |\n", i/2+1, h.Way, h.Rate, h.Result.RPS, ms(h.Result.Latency.P50), ms(h.Result.Latency.P99))
	}

	p("\n## 2. Cross-node hop\n\nbob's pod runs on n2: n1's proxy authenticates, resolves and forwards to n2's proxy, " +
		"which authenticates again and talks to the app. Both proxies and the app share core 0.\n\n")
	p("| body | conns | hop req/s | p50 | p99 | (b) req/s | hop/(b) |\n|---|---|---|---|---|---|---|\n")
	for _, tc := range []struct{ size, conns int }{{1 << 10, 1}, {1 << 10, 64}, {64 << 10, 64}} {
		h := r.find(viaHop, tc.size, tc.conns)
		bb := r.find(viaProxy, h.Size, h.Conns).Result
		p("| %s | %d | %.0f | %s | %s | %.0f | %.2f |\n", kib(h.Size), h.Conns, h.Result.RPS,
			ms(h.Result.Latency.P50), ms(h.Result.Latency.P99), bb.RPS, ratio(h.Result.RPS, bb.RPS))
	}

	p("\n## 3. SSE\n\n300 events 5 ms apart; each event carries its send time, the delay is arrival minus send.\n\n")
	streamTable(&b, r.SSE)
	p("\n## 4. WebSocket\n\nEcho of 3,000 64-byte messages, one at a time, on one connection.\n\n")
	streamTable(&b, r.WSEcho)
	i := r.Idle
	p("\nIdle bridged WebSockets through the proxy: %d of %d opened", i.Open, i.Wanted)
	if i.Err != "" {
		p(" (stopped by: %s)", i.Err)
	}
	p(" in %s", durS(i.Opening))
	if r.IdleLimit != "" {
		p(": %s", r.IdleLimit)
	}
	p(".\n\n| | RSS | heap in use | stacks in use | goroutines |\n|---|---|---|---|---|\n")
	p("| before | %s | %s | %s | %d |\n", mib(i.Before.RSS), mib(int64(i.Before.HeapInuse)), mib(int64(i.Before.StackInuse)), i.Before.Goroutines)
	p("| after | %s | %s | %s | %d |\n", mib(i.After.RSS), mib(int64(i.After.HeapInuse)), mib(int64(i.After.StackInuse)), i.After.Goroutines)
	if i.Open > 0 {
		n := float64(i.Open)
		p("| per socket | %.1f KiB | %.1f KiB | %.1f KiB | %.1f |\n",
			float64(i.After.RSS-i.Before.RSS)/n/1024, (float64(i.After.HeapInuse)-float64(i.Before.HeapInuse))/n/1024,
			(float64(i.After.StackInuse)-float64(i.Before.StackInuse))/n/1024, float64(i.After.Goroutines-i.Before.Goroutines)/n)
	}

	if r.IdleHeap != "" {
		p("\nThe proxy's live heap with the sockets open (`go tool pprof -top -sample_index=inuse_space`, `%s/proxy-ws-heap.pprof`):\n\n```\n%s```\n", c.profile, trimProfile(r.IdleHeap))
	}

	s := r.Sessions
	p("\n## 5. Sessions\n\n`testing.Benchmark` of bench/sessions (also `go test -bench . ./bench/sessions`), on core 1.\n\n")
	p("| check | ns/op | B/op | allocs/op |\n|---|---|---|---|\n")
	for _, f := range []struct {
		name string
		f    benchFigure
	}{{"JWT verify, uncached (Ed25519)", s.VerifyUncached}, {"JWT verify, cached", s.VerifyCached}, {"bearer token (SHA-256, constant-time compare)", s.Bearer}} {
		p("| %s | %.0f | %d | %d |\n", f.name, f.f.NsPerOp, f.f.BytesPerOp, f.f.AllocsPerOp)
	}

	p("\n## 6. Scale\n\nA node proxy process (informer.Index plus nodeproxy.Proxy) fed N accounts: N claims and N Sandboxes " +
		"across 50 nodes, this node's pods (N/50) and the 50 nodes, through the Index's real informers as a watch-list stream. " +
		"Sync is from starting the informers to synced; RSS after the fed lists are freed.\n\n")
	p("| users | pods cached | sync | RSS (empty proxy) | RSS | heap per user | resolve (Lookup) |\n|---|---|---|---|---|---|---|\n")
	for _, sc := range r.Scale {
		p("| %d | %d | %s | %s | %s | %.0f B | %d ns |\n", sc.Users, sc.Pods, ms(sc.Sync), mib(sc.BaseRSS), mib(sc.RSS), sc.HeapPerUser, sc.Lookup.Nanoseconds())
	}

	p("\n## 7. Lifecycle\n\n")
	switch {
	case r.Lifecycle != nil:
		l := r.Lifecycle
		p("Real kube-apiserver and etcd, the simulated 2-node cluster (warm pool of 4, resume delay %s), the auth API with its sweeper "+
			"(IDLE_TIMEOUT %s, reports every %s) and a node proxy per node with wake-on-connect; started in %s.\n\n",
			durS(lifecycle.ResumeDelay), durS(lifecycle.IdleTimeout), durS(lifecycle.ReportInterval), durS(l.Startup))
		p("| figure | n | p50 | p99 | max |\n|---|---|---|---|---|\n")
		got := "all got 201"
		if l.Created < lifecycle.Signups {
			got = fmt.Sprintf("%d got 201, the others 202", l.Created)
		}
		p("| %d concurrent signups: time to 201 (%s) | %d | %s | %s | %s |\n", lifecycle.Signups, got, l.Signup.N, ms(l.Signup.P50), ms(l.Signup.P99), ms(l.Signup.Max))
		if l.Created < lifecycle.Signups {
			p("| signups: time to any answer (201 or 202) | %d | %s | %s | %s |\n", l.Answered.N, ms(l.Answered.P50), ms(l.Answered.P99), ms(l.Answered.Max))
			p("| signups: time until the claim is Ready | %d | %s | %s | %s |\n", l.Ready.N, ms(l.Ready.P50), ms(l.Ready.P99), ms(l.Ready.Max))
		}
		p("| wake: request to first byte minus the pod start delay | %d | %s | %s | %s |\n", l.WakeOverhead.N, ms(l.WakeOverhead.P50), ms(l.WakeOverhead.P99), ms(l.WakeOverhead.Max))
		p("| suspend lag after IDLE_TIMEOUT | %d | %s | %s | %s |\n", l.SuspendLag.N, ms(l.SuspendLag.P50), ms(l.SuspendLag.P99), ms(l.SuspendLag.Max))
	case r.LifecycleErr != "":
		p("Failed: %s\n", r.LifecycleErr)
	default:
		p("Skipped (-lifecycle=false).\n")
	}

	if r.Profile != "" {
		p("\n## Proxy CPU profile\n\nn1's proxy under 64 connections of 1 KiB requests (`go tool pprof -top`, then by stage; the profile is in `%s/proxy-cpu.pprof`).\n\n```\n%s```\n", c.profile, trimProfile(r.Profile))
	}
	p("\n%s", findings)
	return b.String()
}

// targets evaluates the targets.
func targets(r *results) []target {
	a, bb, cc := r.find(direct, 1<<10, 64).Result.RPS, r.find(viaProxy, 1<<10, 64).Result.RPS, r.find(viaBase, 1<<10, 64).Result.RPS
	var ts []target
	ts = append(ts, target{"(b)/(a) >= 0.35 at 64 conns, 1 KiB", fmt.Sprintf("%.2f", ratio(bb, a)), ratio(bb, a) >= 0.35})
	ts = append(ts, target{"(b)/(c) >= 3 at 64 conns, 1 KiB", fmt.Sprintf("%.2f", ratio(bb, cc)), ratio(bb, cc) >= 3})
	if len(r.Half) > 0 {
		d, pr := r.halfP99(direct), r.halfP99(viaProxy)
		added := pr - d
		ts = append(ts, target{"p99 added latency <= 1 ms at half of peak", fmt.Sprintf("%s (%s vs %s direct)", ms(added), ms(pr), ms(d)), added <= time.Millisecond})
	}
	if len(r.SSE) == 2 {
		added := r.SSE[1].Latency.P99 - r.SSE[0].Latency.P99
		ts = append(ts, target{"SSE added delay p99 <= 5 ms", ms(added), added <= 5*time.Millisecond})
	}
	if r.Idle.Open > 0 {
		per := float64(r.Idle.After.RSS-r.Idle.Before.RSS) / float64(r.Idle.Open) / 1024
		ts = append(ts, target{"<= 32 KiB RSS per bridged WebSocket", fmt.Sprintf("%.1f KiB (%d sockets)", per, r.Idle.Open), per <= 32})
	}
	ts = append(ts, target{"cached JWT verify <= 1 us", fmt.Sprintf("%.0f ns", r.Sessions.VerifyCached.NsPerOp), r.Sessions.VerifyCached.NsPerOp <= 1000})
	for _, sc := range r.Scale {
		if sc.Users == 100_000 {
			ts = append(ts, target{"100k users <= 200 MB RSS in the node proxy", mib(sc.RSS), sc.RSS <= 200<<20})
		}
	}
	if l := r.Lifecycle; l != nil {
		ts = append(ts, target{"wake overhead <= 200 ms (median)", fmt.Sprintf("%s (max %s)", ms(l.WakeOverhead.P50), ms(l.WakeOverhead.Max)), l.WakeOverhead.P50 <= 200*time.Millisecond})
	}
	return ts
}

// halfP99 is the best (lowest) p99 of w over the half-load rounds: the
// round least disturbed by other work, as the matrix takes its best.
func (r *results) halfP99(w way) time.Duration {
	var p99s []time.Duration
	for _, h := range r.Half {
		if h.Way == w {
			p99s = append(p99s, h.Result.Latency.P99)
		}
	}
	return slices.Min(p99s)
}

// streamTable writes a latency table of direct and proxy rows.
func streamTable(b *strings.Builder, rows []wayLatency) {
	fmt.Fprintf(b, "| way | n | p50 | p99 | max |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s |\n", r.Way, r.Latency.N, ms(r.Latency.P50), ms(r.Latency.P99), ms(r.Latency.Max))
	}
	if len(rows) == 2 {
		fmt.Fprintf(b, "| added by the proxy | | %s | %s | |\n", ms(rows[1].Latency.P50-rows[0].Latency.P50), ms(rows[1].Latency.P99-rows[0].Latency.P99))
	}
}

// trimProfile keeps pprof's header and table, without the binary's path.
func trimProfile(s string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "File:") || strings.HasPrefix(line, "Build ID:") {
			continue
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// machine describes the CPU, memory, kernel and Go version.
func machine() string {
	model := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	mem := "unknown"
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				var kb int64
				fmt.Sscan(strings.TrimSpace(v), &kb)
				mem = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	kernel := "unknown"
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(data))
	}
	return fmt.Sprintf("- CPU: %d cores, %s\n- memory: %s\n- kernel: Linux %s\n- Go: %s %s/%s\n",
		runtime.NumCPU(), model, mem, kernel, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// ratio is a/b, or 0 without b.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// ms formats d in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d.Microseconds())/1000) }

// us formats d in microseconds.
func us(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d.Nanoseconds())/1000) }

// durS formats d rounded to 10ms.
func durS(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }

// kib formats n bytes in KiB.
func kib(n int) string { return fmt.Sprintf("%d KiB", n>>10) }

// mib formats n bytes in MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
