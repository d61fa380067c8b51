package activity

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandgate/sandgate/internal/metricset"
)

// Report results, the only values of the reports' result label.
const (
	resultOK    = "ok"
	resultError = "error"
)

// reporterMetrics holds the Reporter's collectors, registered on the
// Registerer from ReporterOptions, never globally.
type reporterMetrics struct {
	reports *prometheus.CounterVec // label result: ok, error
}

func newReporterMetrics(reg prometheus.Registerer) (*reporterMetrics, error) {
	s := metricset.New("activity")
	m := &reporterMetrics{
		reports: s.CounterVec(prometheus.CounterOpts{
			Name: "reports_total", Help: "Activity reports sent to the auth API by result (after retries).",
		}, []string{"result"}, metricset.Each(resultOK, resultError)...),
	}
	if err := s.Register(reg); err != nil {
		return nil, err
	}
	return m, nil
}
