package metricset

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestSetRegistersEveryCollectorWithSeries(t *testing.T) {
	s := New("demo")
	c := s.CounterVec(prometheus.CounterOpts{Name: "calls_total", Help: "Calls by result."},
		[]string{"result"}, Each("ok", "error")...)
	s.Counter(prometheus.CounterOpts{Name: "bytes_total", Help: "Bytes."})
	s.Gauge(prometheus.GaugeOpts{Name: "leader", Help: "Leader."})
	s.Histogram(prometheus.HistogramOpts{Name: "wait_seconds", Help: "Wait.", Buckets: []float64{1}})
	s.HistogramVec(prometheus.HistogramOpts{Name: "stage_seconds", Help: "Stage.", Buckets: []float64{1}}, "stage")
	reg := prometheus.NewPedanticRegistry()
	if err := s.Register(reg); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c); n != 2 {
		t.Errorf("calls_total has %d series before any call, want 2 (ok, error)", n)
	}
	want := `
# HELP sandgate_demo_calls_total Calls by result.
# TYPE sandgate_demo_calls_total counter
sandgate_demo_calls_total{result="error"} 0
sandgate_demo_calls_total{result="ok"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "sandgate_demo_calls_total"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 5 {
		t.Errorf("gathered %d series (%v), want 5 (the stage histogram has none yet)", n, err)
	}
}

func TestRegisterTwiceFails(t *testing.T) {
	reg := prometheus.NewRegistry()
	for i, want := range []bool{false, true} {
		s := New("demo")
		s.Counter(prometheus.CounterOpts{Name: "x_total", Help: "X."})
		if err := s.Register(reg); (err != nil) != want {
			t.Errorf("register %d: error %v, want error %v", i, err, want)
		}
	}
	if err := New("demo").Register(nil); err != nil {
		t.Errorf("nil registerer: %v", err)
	}
}
