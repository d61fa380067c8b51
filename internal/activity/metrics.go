package activity

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
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
	m := &reporterMetrics{
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sandgate", Subsystem: "activity", Name: "reports_total",
			Help: "Activity reports sent to the auth API by result (after retries).",
		}, []string{"result"}),
	}
	m.reports.WithLabelValues(resultOK)
	m.reports.WithLabelValues(resultError)
	if reg != nil {
		if err := reg.Register(m.reports); err != nil {
			return nil, fmt.Errorf("register activity metrics: %w", err)
		}
	}
	return m, nil
}
