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

// Summarise sorts samples and returns their percentiles.
func Summarise(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	slices.Sort(samples)
	at := func(q float64) time.Duration { return samples[min(len(samples)-1, int(q*float64(len(samples))))] }
	return Latency{N: len(samples), P50: at(0.50), P99: at(0.99), Max: samples[len(samples)-1]}
}
