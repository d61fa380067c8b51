package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sandgate/sandgate/bench/scale"
)

// dataTable writes app a's ways (a)-(e) and (b)'s ratios against them.
func dataTable(p printf, r *results, a app, c config) {
	p("\n### %s app\n\n| way | body | conns | req/s | p50 | p99 | CPU per request: front server | app | system calls per request: front server |\n|---|---|---|---|---|---|---|---|---|\n", a.Name)
	matrix := func(each func(size, conns int)) {
		for _, cl := range plan(a, c) {
			if cl.Way == direct {
				each(cl.Size, cl.Conns)
			}
		}
	}
	matrix(func(size, conns int) {
		for _, w := range c.frontWays() {
			rs := r.runs(a, cell{w, size, conns})
			front, calls := "-", "-"
			if w != direct {
				front, calls = usCell(rs.cpu(servedBy[w][0])), countCell(rs.syscalls(servedBy[w][0]))
			}
			p("| %s | %s | %d | %s | %s | %s | %s | %s | %s |\n", wayName[w], kib(size), conns, rpsCell(rs.rps()),
				msCell(rs.p50()), msCell(rs.p99()), front, usCell(rs.cpu("app")), calls)
		}
	})
	// (b)'s throughput against every other way, then its front server's
	// CPU against every other front server's.
	var others, fronts []way
	for _, w := range c.frontWays() {
		if w != viaProxy {
			others = append(others, w)
		}
		if w != viaProxy && w != direct {
			fronts = append(fronts, w)
		}
	}
	head := "| body | conns |"
	for _, w := range others {
		head += " b/" + wayLetter[w] + " |"
	}
	for _, w := range fronts {
		head += " CPU b/" + wayLetter[w] + " |"
	}
	p("\nRatios of the medians (throughput, then the front server's CPU per request):\n\n%s\n|%s\n", head,
		strings.Repeat("---|", 2+len(others)+len(fronts)))
	matrix(func(size, conns int) {
		get := func(w way) rounds { return r.runs(a, cell{w, size, conns}) }
		rb := get(viaProxy)
		row := fmt.Sprintf("| %s | %d |", kib(size), conns)
		for _, w := range others {
			row += " " + ratioCell(rb.rps().Med, get(w).rps().Med) + " |"
		}
		for _, w := range fronts {
			row += " " + ratioCell(rb.cpu("proxy").Med, get(w).cpu(servedBy[w][0]).Med) + " |"
		}
		p("%s\n", row)
	})
}

// wayLetter names the ways (a) to (e) in the ratios' headers.
var wayLetter = map[way]string{direct: "a", viaProxy: "b", viaBase: "c", viaBare: "d", viaTraefik: "e"}

// wayName labels the ways in tables.
var wayName = map[way]string{direct: "(a) direct", viaProxy: "(b) node proxy", viaBase: "(c) httputil", viaBare: "(d) bare fasthttp", viaTraefik: "(e) Traefik", viaHop: "hop"}

// halfTable writes the half-load rounds and their medians, the proxy and
// the app sharing one core.
func halfTable(p printf, r *results, c config) {
	p("\n### Latency at half load\n\nHalf of (b)'s median peak (fasthttp app, 64 connections, 1 KiB), paced open loop (latency counts from each "+
		"request's scheduled time), %d alternating rounds, the proxy and the app sharing CPU %d; the target reads the next table, "+
		"where the proxy has a core of its own. Two columns tell "+
		"a slow server from a disturbed run: *generator lag* is how late the load generator itself sent requests after their "+
		"scheduled time (a lag near the p99 means the generator's core was taken, not that the server was slow), and *CPU "+
		"pressure* is the share of the run in which some task on the machine waited for a CPU (`/proc/pressure/cpu`, the "+
		"bench's own processes included).\n\n", c.rounds, serverCPU)
	p("| round | way | rate req/s | achieved req/s | p50 | p99 | generator lag p99 | CPU pressure |\n|---|---|---|---|---|---|---|---|\n")
	for i, h := range r.Half {
		p("| %d | %s | %.0f | %.0f | %s | %s | %s | %s |\n", i/2+1, wayName[h.Way], h.Rate, h.Result.RPS, ms(h.Result.Latency.P50),
			ms(h.Result.Latency.P99), ms(h.Result.Lag.P99), pressure(h.Stall))
	}
	for _, w := range []way{direct, viaProxy} {
		p("| median | %s | | | | %s | | |\n", wayName[w], ms(wayP99(r.Half, w).dur()))
	}
}

// pressure formats a CPU pressure share.
func pressure(stall float64) string {
	if stall < 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*stall)
}

// crowdTable writes the many-users run beside (b) for each app.
func crowdTable(p printf, r *results, c config) {
	p("\n### Many users\n\n%d sessions of %d users, each user's sandbox on n1 (a pod whose app is the way's app), every request "+
		"from a session picked at random. The node proxy uses the real handshaker (internal/handshake): on the first request to "+
		"each sandbox it reads the pod's CRI log file (%d lines, the launch line %d lines from the end) and trades the launch "+
		"token with the app for its cookie, which then comes from the handshaker's cache. Those first requests fall in the "+
		"warm-up of the first round. The apps do not check the cookie they are sent.\n\n", crowdSessions, crowdSandboxes,
		logLinesBefore+1+logLinesAfter, logLinesAfter+1)
	p("| app | body | conns | req/s | p50 | p99 | proxy CPU per request | (b) req/s | many/(b) |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, a := range apps {
		for _, cl := range plan(a, c) {
			if cl.Way != viaCrowd {
				continue
			}
			rs, bb := r.runs(a, cl), r.runs(a, cell{viaProxy, cl.Size, cl.Conns}).rps()
			p("| %s | %s | %d | %s | %s | %s | %s | %s | %s |\n", a.Name, kib(cl.Size), cl.Conns, rpsCell(rs.rps()), msCell(rs.p50()),
				msCell(rs.p99()), usCell(rs.cpu("crowd")), rpsCell(bb), ratioCell(rs.rps().Med, bb.Med))
		}
	}
}

// scaleTables writes the scale and growth tables.
func scaleTables(p printf, r *results) {
	p("\n## 6. Scale\n\nA node proxy process (the shipped assembly, internal/requestpath/nodeproxyd, running) fed N accounts: N claims and N Sandboxes " +
		"across 50 nodes, this node's pods and the 50 nodes, through the Index's real informers as a watch-list stream. " +
		"Pods cached counts the users the running Index routes to this node. Sync is from starting the node proxy to its /readyz " +
		"passing (informers synced, keys fetched). Empty proxy is the process's RSS with a node proxy running over empty caches; " +
		"RSS is with a second one holding every account, after the fed lists are freed.\n\n")
	p("| users | pods cached | sync | RSS (empty proxy) | RSS | heap per user | resolve (Lookup) |\n|---|---|---|---|---|---|---|\n")
	for _, sc := range r.Scale {
		p("| %d | %d | %s | %s | %s | %.0f B | %d ns |\n", sc.Users, sc.Pods, ms(sc.Sync), mib(sc.BaseRSS), mib(sc.RSS), sc.HeapPerUser, sc.Lookup.Nanoseconds())
	}
	if len(r.Growth) == 0 {
		return
	}
	p("\n### How cost grows with pods cached\n\nThe same with one node: every account's pod runs on the proxy's node and is cached.\n\n")
	p("| pods cached | sync | RSS (empty proxy) | RSS | RSS above empty | resolve (Lookup) |\n|---|---|---|---|---|---|\n")
	for _, g := range r.Growth {
		p("| %d | %s | %s | %s | %s | %d ns |\n", g.Pods, ms(g.Sync), mib(g.BaseRSS), mib(g.RSS), mib(g.RSS-g.BaseRSS), g.Lookup.Nanoseconds())
	}
	p("\n")
	for _, f := range []struct {
		name  string
		value func(scale.Result) float64
		unit  func(float64) string
	}{
		{"sync", func(g scale.Result) float64 { return float64(g.Sync) }, func(v float64) string { return ms(time.Duration(v)) }},
		{"RSS above empty", func(g scale.Result) float64 { return float64(g.RSS - g.BaseRSS) }, func(v float64) string { return mib(int64(v)) }},
		{"resolve", func(g scale.Result) float64 { return float64(g.Lookup) }, func(v float64) string { return fmt.Sprintf("%.0f ns", v) }},
	} {
		first, last := r.Growth[0], r.Growth[len(r.Growth)-1]
		p("- %s: %s\n", f.name, growth(float64(first.Pods), f.value(first), float64(last.Pods), f.value(last), "pods", f.unit))
	}
}

// growth says how a figure grew from n1 to n2 of what (pods, nodes): the
// exponent k of f ~ n^k fitted through the two measured points, and its
// class.
func growth(n1, f1, n2, f2 float64, what string, unit func(float64) string) string {
	if n1 <= 0 || n2 <= n1 || f1 <= 0 || f2 <= 0 {
		return fmt.Sprintf("%s at %.0f %s, %s at %.0f: too few points to fit", unit(f1), n1, what, unit(f2), n2)
	}
	k := math.Log(f2/f1) / math.Log(n2/n1)
	class := "worse than O(n)"
	switch {
	case k < 0.15:
		class = "O(1)"
	case k < 0.8:
		class = "between O(1) and O(n)"
	case k <= 1.2:
		class = "O(n)"
	}
	return fmt.Sprintf("%s at %.0f %s, %s at %.0f: grows as n^%.2f, %s", unit(f1), n1, what, unit(f2), n2, k, class)
}

// rpsCell formats a throughput spread.
func rpsCell(s spread) string {
	return fmt.Sprintf("%.0f (%.0f-%.0f)", s.Med, s.Min, s.Max)
}

// msCell formats a latency spread in ns as milliseconds.
func msCell(s spread) string {
	return fmt.Sprintf("%.3f ms (%.3f-%.3f)", s.Med/1e6, s.Min/1e6, s.Max/1e6)
}

// usCell formats a CPU time spread in ns as the median in microseconds.
func usCell(s spread) string { return us(s.dur()) }

// countCell formats a spread of counts per request.
func countCell(s spread) string {
	return fmt.Sprintf("%.2f (%.2f-%.2f)", s.Med, s.Min, s.Max)
}

// ratioCell formats a/b, or "-" without b.
func ratioCell(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// logTable writes what n1's proxy logged per request on the ways through
// it: the access log's cost driver on real nodes, where every line goes
// through the container runtime.
func logTable(p printf, r *results, c config) {
	p("\n### Log output\n\nLines and bytes n1's proxy logged per request over each run (warm-up included; medians of the rounds), " +
		"with the shipped ACCESS_LOG_SUMMARY: a plain success adds to a line per user and route every 10 s instead of a line " +
		"of its own. On a real node each line is read and written again by the container runtime (the CRI log).\n\n")
	p("| app | way | body | conns | lines per request | bytes per request |\n|---|---|---|---|---|---|\n")
	for _, a := range apps {
		for _, cl := range plan(a, c) {
			rs := r.runs(a, cl)
			if len(rs) == 0 || rs[0].Logged == nil {
				continue
			}
			lines := rs.of(func(h httpRun) float64 { return h.Logged.Lines })
			bytes := rs.of(func(h httpRun) float64 { return h.Logged.Bytes })
			p("| %s | %s | %s | %d | %.4f | %.2f |\n", a.Name, wayName[cl.Way], kib(cl.Size), cl.Conns, lines.Med, bytes.Med)
		}
	}
}
