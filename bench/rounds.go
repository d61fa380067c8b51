package main

import (
	"time"

	"github.com/sandgate/sandgate/bench/load"
)

// spread is a figure's median over rounds and its range.
type spread load.Spread

// spreadOf summarises one figure's value in each round.
func spreadOf(xs []float64) spread { return spread(load.SpreadOf(xs)) }

// rounds are every round of one cell.
type rounds []httpRun

// runs returns the rounds of app a's cell c.
func (r *results) runs(a app, c cell) rounds {
	var out rounds
	for _, h := range r.HTTP {
		if h.App == a.Name && h.cell == c {
			out = append(out, h)
		}
	}
	return out
}

// of summarises f over the rounds.
func (rs rounds) of(f func(httpRun) float64) spread {
	xs := make([]float64, len(rs))
	for i, h := range rs {
		xs[i] = f(h)
	}
	return spreadOf(xs)
}

// rps is the requests per second over the rounds.
func (rs rounds) rps() spread { return rs.of(func(h httpRun) float64 { return h.Result.RPS }) }

// p50 and p99 are the latency percentiles over the rounds, in ns.
func (rs rounds) p50() spread {
	return rs.of(func(h httpRun) float64 { return float64(h.Result.Latency.P50) })
}

func (rs rounds) p99() spread {
	return rs.of(func(h httpRun) float64 { return float64(h.Result.Latency.P99) })
}

// cpu is role's CPU time per request over the rounds, in ns.
func (rs rounds) cpu(role string) spread {
	return rs.of(func(h httpRun) float64 { return float64(h.CPU[role]) })
}

// syscalls is role's read and write system calls per request over the
// rounds.
func (rs rounds) syscalls(role string) spread {
	return rs.of(func(h httpRun) float64 { return h.Syscalls[role] })
}

// dur turns a spread's median in ns back into a duration.
func (s spread) dur() time.Duration { return time.Duration(s.Med) }
