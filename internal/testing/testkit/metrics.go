package testkit

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Gathered sums the samples of the counter or gauge family name in reg
// whose labels include every pair of match (every sample when match is
// empty), and reports whether there was any. It fails the test if reg
// cannot be gathered.
func Gathered(t testing.TB, reg prometheus.Gatherer, name string, match map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	var sum float64
	found := false
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !hasLabels(m, match) {
				continue
			}
			found = true
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum, found
}

func hasLabels(m *dto.Metric, match map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := match[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(match)
}
