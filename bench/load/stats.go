// Package load is the bench's load generator and clients: closed-loop and
// paced HTTP load over fasthttp's client, an SSE reader and WebSocket
// clients, all recording every latency so percentiles are exact.
package load

import (
	"slices"
	"time"
)

// Latency summarises a set of samples.
type Latency struct {
	N   int           `json:"n"`
	P50 time.Duration `json:"p50_ns"`
	P99 time.Duration `json:"p99_ns"`
	Max time.Duration `json:"max_ns"`
}

// Summarise returns the percentiles of samples. It sorts a copy: callers
// pair samples with other slices by index after summarising them.
func Summarise(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return Latency{N: len(s), P50: at(0.50), P99: at(0.99), Max: s[len(s)-1]}
}

// Spread is a figure's median over rounds and its range.
type Spread struct {
	Med, Min, Max float64
}

// SpreadOf summarises one figure's value in each round. It sorts a copy.
func SpreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Spread{Med: med, Min: s[0], Max: s[n-1]}
}
