package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/sandgate/sandgate/bench/node"
)

// The split layout is the half-load pair as a deployment runs it: the
// proxy apart from the app. The app and the load generator share
// clientCPU (the generator on the app's core for every way), n1's proxy
// has serverCPU to itself at GOMAXPROCS=1, and a second n1 proxy (wide)
// runs unpinned at GOMAXPROCS=2, as one given the machine's two cores.
// The bare proxy (d) has serverCPU too, at the same rate: what any proxy
// on that library adds, beside what ours does.

// startSplit starts the split layout's app and proxies for a; peerPort is
// n2's, which the proxies need and alice's requests never use.
func startSplit(keys *node.Keys, a app, cookies map[string]string, peerPort int) (*servers, error) {
	s := &servers{app: a, cookies: cookies}
	var out served
	var err error
	if s.appProc, err = startServerOn(a.Role, nil, clientCPU, &out); err != nil {
		return s, err
	}
	s.appAddr = out.Addr
	spec := proxySpec{Node: 0, App: s.appAddr, PeerPort: peerPort, JWKS: keys.JWKS}
	if s.proxy, err = startServerOn("proxy", spec, serverCPU, &out); err != nil {
		return s, err
	}
	s.proxyAddr, s.proxyDebug = out.Addr, out.Debug
	if s.wide, err = startServerOn("proxy", spec, anyCPU, &out); err != nil {
		return s, err
	}
	s.wideAddr = out.Addr
	if s.bare, err = startServerOn("bare", s.appAddr, serverCPU, &out); err != nil {
		return s, err
	}
	s.bareAddr = out.Addr
	return s, nil
}

// halfSplit measures (b)'s peak in the split layout (closed loop, 64
// connections, 1 KiB, one run per round), then the half-load rounds at
// half of it: direct, the pinned proxy, the wide one and the bare proxy,
// alternating.
func halfSplit(ctx context.Context, cfg config, keys *node.Keys, shared *servers, res *results, log *slog.Logger) error {
	_, port, _ := net.SplitHostPort(shared.peerAddr)
	peerPort, _ := strconv.Atoi(port)
	s, err := startSplit(keys, shared.app, shared.cookies, peerPort)
	if s != nil {
		defer s.stop()
	}
	if err != nil {
		return fmt.Errorf("start the split layout: %w", err)
	}
	kb := cell{viaProxy, 1 << 10, 64}
	for range cfg.rounds {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := s.runHTTP(cfg, kb, 0)
		if err != nil {
			return err
		}
		res.SplitPeak = append(res.SplitPeak, r)
	}
	peak := rounds(res.SplitPeak).rps().Med
	for round := range cfg.rounds {
		for _, w := range splitWays {
			if err := ctx.Err(); err != nil {
				return err
			}
			r, err := s.runHTTP(cfg, cell{w, 1 << 10, 64}, peak/2)
			if err != nil {
				return err
			}
			log.Info("half load, split", "round", round, "way", w, "rate", int(peak/2), "rps", int(r.Result.RPS), "p99", r.Result.Latency.P99)
			res.HalfSplit = append(res.HalfSplit, r)
		}
	}
	if cfg.profile == "" {
		return nil
	}
	log.Info("half load, split: the proxy traced, then profiled")
	if t, err := traceHalf(cfg, s, peak/2); err != nil {
		log.Warn("trace at half load", "err", err)
	} else {
		res.HalfTrace = &t
	}
	if res.HalfProfile, err = profileProxy(cfg, s, peak/2, "proxy-half-cpu.pprof"); err != nil {
		log.Warn("profile at half load", "err", err)
	}
	return nil
}

// splitWays are the split layout's half-load ways, in each round's order.
var splitWays = []way{direct, viaProxy, viaWide, viaBare}

// splitAdded is the p99 a proxy way adds to direct in the split layout.
func (r *results) splitAdded(w way) time.Duration {
	return time.Duration(wayP99(r.HalfSplit, w).Med - wayP99(r.HalfSplit, direct).Med)
}

// splitTable writes the split layout's half-load rounds and medians.
func splitTable(p printf, r *results, c config) {
	if len(r.HalfSplit) == 0 {
		return
	}
	peak := rounds(r.SplitPeak).rps()
	p("\n### Latency at half load, the proxy on its own core\n\nThe same pair as a deployment runs it: the app and the load "+
		"generator on CPU %d (the generator on the app's core for every way), n1's proxy alone on CPU %d at GOMAXPROCS=1, and "+
		"a second n1 proxy unpinned at GOMAXPROCS=2 (*wide*); the bare proxy (d) has CPU %d to itself as (b) has, at the same "+
		"rate, to tell what any proxy on fasthttp adds from what ours does. The rate is half of (b)'s median peak in this layout, %.0f req/s "+
		"(%.0f-%.0f over %d closed-loop rounds, 64 connections, 1 KiB); %d alternating rounds. *proxy CPU* is the proxy's CPU "+
		"time per request.\n\n", clientCPU, serverCPU, serverCPU, peak.Med, peak.Min, peak.Max, len(r.SplitPeak), c.rounds)
	p("| round | way | rate req/s | achieved req/s | p50 | p99 | generator lag p99 | CPU pressure | proxy CPU |\n|---|---|---|---|---|---|---|---|---|\n")
	for i, h := range r.HalfSplit {
		cpu := "-"
		if h.Way != direct {
			cpu = us(h.CPU[servedBy[h.Way][0]])
		}
		p("| %d | %s | %.0f | %.0f | %s | %s | %s | %s | %s |\n", i/len(splitWays)+1, splitName[h.Way], h.Rate, h.Result.RPS,
			ms(h.Result.Latency.P50), ms(h.Result.Latency.P99), ms(h.Result.Lag.P99), pressure(h.Stall), cpu)
	}
	for _, w := range splitWays {
		added := "-"
		if w != direct {
			added = "+" + ms(r.splitAdded(w))
		}
		s := wayP99(r.HalfSplit, w)
		p("| median | %s | | | | %s (%s-%s) | added %s | | |\n", splitName[w], ms(s.dur()), ms(time.Duration(s.Min)), ms(time.Duration(s.Max)), added)
	}
	if t := r.HalfTrace; t != nil {
		p("\nOne more run of (b) at the same rate, not among the rounds (achieved %.0f req/s, p99 %s), with the proxy's execution "+
			"trace recorded over its measured part (`%s`). How long the proxy's goroutines waited to run once runnable, from the "+
			"trace (`go tool trace -pprof=sched`, then `go tool pprof -top`):\n\n```\n%s```\n", t.Run.Result.RPS,
			ms(t.Run.Result.Latency.P99), t.File, t.Sched)
	}
	if r.HalfProfile != "" {
		p("\nAnd one more with the proxy's CPU profile (`%s/proxy-half-cpu.pprof`; `go tool pprof -top`, then by stage):\n\n```\n%s```\n",
			c.profile, trimProfile(r.HalfProfile))
	}
}

// splitName labels the split layout's ways.
var splitName = map[way]string{direct: "(a) direct", viaProxy: "(b) node proxy", viaWide: "(b) wide", viaBare: "(d) bare fasthttp"}

// halfTrace is one more proxy run at half load with the proxy's execution
// trace recorded over its measured part; it is not one of the rounds.
type halfTrace struct {
	Run httpRun
	// File is the trace; Sched is pprof's top table of the time the
	// proxy's goroutines waited to run once runnable (go tool trace
	// -pprof=sched).
	File, Sched string
}

// traceHalf runs the traced half-load run.
func traceHalf(c config, s *servers, rate float64) (halfTrace, error) {
	secs := max(1, int(c.duration.Seconds()))
	var t halfTrace
	r, err := during(c, s, cell{viaProxy, 1 << 10, 64}, rate, func() (err error) {
		t.File, err = fetchDebug(s.proxyDebug, c.profile, "proxy-half.trace", fmt.Sprintf("/trace?seconds=%d", secs))
		return err
	})
	if err != nil {
		return t, err
	}
	t.Run = r
	sched := filepath.Join(c.profile, "proxy-half-sched.pprof")
	out, err := exec.Command("go", "tool", "trace", "-pprof=sched", t.File).Output()
	if err != nil {
		return t, fmt.Errorf("go tool trace -pprof=sched: %w", err)
	}
	if err := os.WriteFile(sched, out, 0o644); err != nil {
		return t, fmt.Errorf("save scheduler profile: %w", err)
	}
	t.Sched, err = pprofTop(sched, "-nodecount=12")
	return t, err
}
