package load

import (
	"slices"
	"testing"
	"time"
)

func TestSummariseLeavesInputAlone(t *testing.T) {
	in := []time.Duration{5, 1, 4, 2, 3}
	want := slices.Clone(in)
	got := Summarise(in)
	if !slices.Equal(in, want) {
		t.Errorf("Summarise reordered its input: %v, want %v", in, want)
	}
	if got != (Latency{N: 5, P50: 3, P99: 5, Max: 5}) {
		t.Errorf("Summarise = %+v", got)
	}
}

func TestSummariseEmpty(t *testing.T) {
	if got := Summarise(nil); got != (Latency{}) {
		t.Errorf("Summarise(nil) = %+v, want zero", got)
	}
}
