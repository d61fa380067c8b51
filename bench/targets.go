package main

import (
	"fmt"
	"time"
)

// target is one stated goal and whether this run met it.
type target struct {
	what, measured string
	met            bool
}

// targets judges the targets on this run's medians; a target
// whose figures this run lacks is left out.
func targets(r *results) []target {
	var ts []target
	add := func(what, measured string, met bool) { ts = append(ts, target{what, measured, met}) }
	kb, kd := cell{viaProxy, 1 << 10, 64}, cell{viaBare, 1 << 10, 64}
	pcpu, dcpu := r.runs(fastApp, kb).cpu("proxy").Med, r.runs(fastApp, kd).cpu("bare").Med
	if pcpu > 0 && dcpu > 0 {
		x := pcpu / dcpu
		add("(b) CPU per request <= 1.3x (d)'s at 64 conns, 1 KiB (fasthttp app)",
			fmt.Sprintf("%.2fx (%s vs %s)", x, us(time.Duration(pcpu)), us(time.Duration(dcpu))), x <= 1.3)
	}
	if all, bare := pipelineStageOf(r.Pipeline, "all"), pipelineStageOf(r.Pipeline, "bare"); bare.NsPerOp.Med > 0 {
		extra := all.AllocsMed - bare.AllocsMed
		add(fmt.Sprintf("pipeline benchmark: allocations per plain proxied request <= the bare proxy's + %d", pipelineAllocBudget),
			fmt.Sprintf("%.0f (%.0f vs %.0f bare; %.0f ns vs %.0f ns in process)", extra, all.AllocsMed, bare.AllocsMed, all.NsPerOp.Med, bare.NsPerOp.Med),
			extra <= pipelineAllocBudget)
	}
	page := pageApp.Sizes[0]
	if b, d := r.runs(pageApp, cell{viaProxy, page, 64}).rps().Med, r.runs(pageApp, cell{viaBare, page, 64}).rps().Med; d > 0 {
		add("(b)/(d) throughput >= 0.95 at 64 conns (realistic app)", fmt.Sprintf("%.2f (%.0f vs %.0f req/s)", b/d, b, d), b/d >= 0.95)
	}
	b := r.runs(fastApp, kb).rps().Med
	if cc := r.runs(fastApp, cell{viaBase, 1 << 10, 64}).rps().Med; cc > 0 {
		add("(b)/(c) >= 3 at 64 conns, 1 KiB (fasthttp app)", fmt.Sprintf("%.2f", b/cc), b/cc >= 3)
	}
	if hop := r.runs(fastApp, cell{viaHop, 1 << 10, 64}).rps().Med; hop > 0 && b > 0 {
		add("cross-node hop >= 0.55x (b) at 64 conns, 1 KiB", fmt.Sprintf("%.2f", hop/b), hop/b >= 0.55)
	}
	if d, pr := wayP99(r.HalfSplit, direct), wayP99(r.HalfSplit, viaProxy); pr.Med > 0 {
		added := r.splitAdded(viaProxy)
		add("p99 added latency <= 1 ms at half of (b)'s peak, proxy on its own core",
			fmt.Sprintf("%s (%s vs %s direct; proxy rounds %s-%s; at GOMAXPROCS=2 unpinned: %s)", ms(added), ms(pr.dur()), ms(d.dur()),
				ms(time.Duration(pr.Min)), ms(time.Duration(pr.Max)), ms(r.splitAdded(viaWide))),
			added <= time.Millisecond)
	}
	if len(r.SSE) == 2 {
		added := r.SSE[1].Latency.P99 - r.SSE[0].Latency.P99
		add("SSE added delay p99 <= 5 ms", ms(added), added <= 5*time.Millisecond)
	}
	if r.Idle.Open > 0 {
		per := float64(r.Idle.After.RSS-r.Idle.Before.RSS) / float64(r.Idle.Open) / 1024
		add("<= 24 KiB RSS per bridged WebSocket", fmt.Sprintf("%.1f KiB (%d sockets)", per, r.Idle.Open), per <= 24)
	}
	if v := r.Sessions.VerifyCached.NsPerOp; v > 0 {
		add("cached JWT verify <= 1 us", fmt.Sprintf("%.0f ns", v), v <= 1000)
	}
	for _, sc := range r.Scale {
		if sc.Users == 100_000 {
			add("100k users <= 200 MB RSS in the node proxy", mib(sc.RSS), sc.RSS <= 200<<20)
		}
	}
	if l := r.Lifecycle; l != nil {
		add("wake overhead <= 200 ms (median)", fmt.Sprintf("%s (max %s)", ms(l.WakeOverhead.P50), ms(l.WakeOverhead.Max)), l.WakeOverhead.P50 <= 200*time.Millisecond)
	}
	return ts
}

// wayP99 is w's p99 over the runs of w among runs.
func wayP99(runs []httpRun, w way) spread {
	var rs rounds
	for _, h := range runs {
		if h.Way == w {
			rs = append(rs, h)
		}
	}
	return rs.p99()
}
