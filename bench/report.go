package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/sandgate/sandgate/bench/lifecycle"
)

// render formats the results as RESULTS.md.
func render(c config, r *results) string {
	var b strings.Builder
	var p printf = func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# sandgate benchmark results\n\n")
	p("Written by `%s` on %s; the whole run took %s.\n\n",
		strings.Join(os.Args, " "), r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Took.Round(time.Second))
	p("## Machine\n\n%s\n", machine())
	p("Pinning: the bench runs every part as a child process of its own binary. The app, the node proxies, " +
		"the baseline and the bare proxy run under `taskset -c 0` with GOMAXPROCS=1; every load generator and client " +
		"runs under `taskset -c 1` with GOMAXPROCS=1. So the servers of each way share one core and the load " +
		"generator never takes the proxy's CPU; (a) is the app alone on that core, (b)-(d) are proxy plus app on it. " +
		"Other work on this shared machine still adds noise: compare ratios from the same run.\n\n")

	p("## Targets\n\nEvery figure is from this run; the data path's are medians over its rounds.\n\n| target | measured | met |\n|---|---|---|\n")
	for _, t := range targets(r) {
		met := "**not met**"
		if t.met {
			met = "met"
		}
		p("| %s | %s | %s |\n", t.what, t.measured, met)
	}

	p("\n## 1. HTTP data path\n\nClosed loop, %s measured after %s warm-up, every response checked; each cell ran in %d interleaved rounds. "+
		"Each figure is the median of the rounds, with the lowest and highest round in brackets. "+
		"(a) the app directly, (b) one node proxy as cmd/nodeproxy assembles it (internal/requestpath/nodeproxyd, the shipped defaults "+
		"but for lifted per-user limits): JWT cookie, informer resolve, in-flight slot, activity tracking, header policy, the "+
		"app cookie from the real handshaker (the launch token read once from the pod's CRI log file, then cached), metrics, "+
		"and the JSON access log, counted and dropped, with plain successes summarised into one line per user and route every "+
		"10 s (ACCESS_LOG_SUMMARY); "+
		"(c) net/http with httputil.ReverseProxy, (d) a bare fasthttp reverse proxy with the node proxy's client settings and "+
		"nothing else (no auth, lookup, policy, metrics or log): the library's limit. "+
		"(b) is one hot user, alice; the many-users run below spreads the load over many. CPU per request is user + system time of each server process from /proc/<pid>/stat over the run "+
		"(warm-up included; 10 ms ticks): the cost that decides throughput when the servers share one core.\n", c.duration, c.warmup, c.rounds)
	for _, a := range apps {
		dataTable(p, r, a, c)
	}
	logTable(p, r, c)
	halfTable(p, r, c)
	splitTable(p, r, c)
	crowdTable(p, r, c)
	pipelineTable(p, r.Pipeline)

	p("\n## 2. Cross-node hop\n\nbob's pod runs on n2: n1's proxy authenticates, resolves and forwards to n2's proxy, " +
		"which authenticates again and talks to the (fasthttp) app. Both proxies and the app share core 0.\n\n")
	p("| body | conns | hop req/s | p50 | p99 | (b) req/s | hop/(b) |\n|---|---|---|---|---|---|---|\n")
	for _, hc := range hopCells(c.smoke) {
		h := r.runs(fastApp, hc)
		bb := r.runs(fastApp, cell{viaProxy, hc.Size, hc.Conns}).rps()
		p("| %s | %d | %s | %s | %s | %s | %s |\n", kib(hc.Size), hc.Conns, rpsCell(h.rps()),
			msCell(h.p50()), msCell(h.p99()), rpsCell(bb), ratioCell(h.rps().Med, bb.Med))
	}
	if len(r.HopProfiles) == 2 {
		for i, node := range []string{"n1", "n2"} {
			p("\n%s's proxy in one more hop run at 64 connections, 1 KiB, both profiled at once (`%s/hop-%s-cpu.pprof`; `go tool pprof -top`, then by stage):\n\n```\n%s```\n",
				node, c.profile, node, trimProfile(r.HopProfiles[i]))
		}
	}

	p("\n## 3. SSE\n\n%d events 5 ms apart; each event carries its send time, the delay is arrival minus send.\n\n", c.sseEvents)
	streamTable(p, r.SSE)
	p("\n## 4. WebSocket\n\nEcho of %d 64-byte messages, one at a time, on one connection.\n\n", echoMessages)
	streamTable(p, r.WSEcho)
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

	scaleTables(p, r)

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
		p("Skipped (-lifecycle=false, or -smoke).\n")
	}

	if r.Profile != "" {
		p("\n## Proxy CPU profile\n\nn1's proxy under 64 connections of 1 KiB requests (`go tool pprof -top`, then by stage; the profile is in `%s/proxy-cpu.pprof`).\n\n```\n%s```\n", c.profile, trimProfile(r.Profile))
	}
	if r.Gap != nil {
		gapTable(p, r.Gap)
	}
	if r.BareProfile != "" {
		p("\nThe bare proxy (d) in the same cell, right after (`%s/bare-cpu.pprof`):\n\n```\n%s```\n", c.profile, trimProfile(r.BareProfile))
	}
	p("\nWhat these figures mean is in [FINDINGS.md](FINDINGS.md), written by hand from a run it names and dates.\n")
	return b.String()
}

// streamTable writes a latency table of direct and proxy rows.
func streamTable(p printf, rows []wayLatency) {
	p("| way | n | p50 | p99 | max |\n|---|---|---|---|---|\n")
	for _, r := range rows {
		p("| %s | %d | %s | %s | %s |\n", r.Way, r.Latency.N, ms(r.Latency.P50), ms(r.Latency.P99), ms(r.Latency.Max))
	}
	if len(rows) == 2 {
		p("| added by the proxy | | %s | %s | |\n", ms(rows[1].Latency.P50-rows[0].Latency.P50), ms(rows[1].Latency.P99-rows[0].Latency.P99))
	}
}

// printf appends formatted text to the report being written.
type printf func(format string, args ...any)

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

// ms formats d in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/1e6) }

// us formats d in microseconds.
func us(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d.Nanoseconds())/1000) }

// durS formats d rounded to 10ms.
func durS(d time.Duration) string { return d.Round(10 * time.Millisecond).String() }

// kib formats n bytes in KiB.
func kib(n int) string {
	if n%1024 == 0 {
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/1024)
}

// mib formats n bytes in MiB.
func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
