package main

import (
	"testing"

	"github.com/sandgate/sandgate/bench/sessions"
)

// benchFigure is one go test benchmark's outcome.
type benchFigure struct {
	NsPerOp     float64 `json:"ns_per_op"`
	AllocsPerOp int64   `json:"allocs_per_op"`
	BytesPerOp  int64   `json:"bytes_per_op"`
}

// sessionFigures are the session checks' costs.
type sessionFigures struct {
	VerifyUncached benchFigure `json:"verify_uncached"`
	VerifyCached   benchFigure `json:"verify_cached"`
	Bearer         benchFigure `json:"bearer"`
}

// runSessions runs the session benchmarks with testing.Benchmark.
func runSessions() sessionFigures {
	fig := func(f func(*testing.B)) benchFigure {
		r := testing.Benchmark(f)
		return benchFigure{NsPerOp: float64(r.T.Nanoseconds()) / float64(r.N), AllocsPerOp: r.AllocsPerOp(), BytesPerOp: r.AllocedBytesPerOp()}
	}
	return sessionFigures{
		VerifyUncached: fig(sessions.VerifyUncached),
		VerifyCached:   fig(sessions.VerifyCached),
		Bearer:         fig(sessions.BearerCheck),
	}
}
