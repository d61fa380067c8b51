// Package metricset makes a subsystem's Prometheus collectors from their
// options, names them sandgate_<subsystem>_<name>, creates their fixed
// series and registers them together on a private registry.
package metricset

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Namespace is the first part of every metric name a Set makes.
const Namespace = "sandgate"

// Set makes the collectors of one subsystem and remembers them for
// Register. It sets the options' Namespace and Subsystem; the rest stay
// literals at the call site, where the docs check reads the metric names.
type Set struct {
	subsystem  string
	collectors []prometheus.Collector
}

// New returns an empty Set for subsystem: its metrics are named
// sandgate_<subsystem>_<Name>.
func New(subsystem string) *Set { return &Set{subsystem: subsystem} }

// keep remembers c for Register and returns it.
func keep[C prometheus.Collector](s *Set, c C) C {
	s.collectors = append(s.collectors, c)
	return c
}

// CounterVec makes a counter vector labelled by labels, each series in
// series created at once so that dashboards see zeros, not gaps.
func (s *Set) CounterVec(o prometheus.CounterOpts, labels []string, series ...[]string) *prometheus.CounterVec {
	o.Namespace, o.Subsystem = Namespace, s.subsystem
	c := prometheus.NewCounterVec(o, labels)
	for _, values := range series {
		c.WithLabelValues(values...)
	}
	return keep(s, c)
}

// Counter makes a counter.
func (s *Set) Counter(o prometheus.CounterOpts) prometheus.Counter {
	o.Namespace, o.Subsystem = Namespace, s.subsystem
	return keep(s, prometheus.NewCounter(o))
}

// Gauge makes a gauge.
func (s *Set) Gauge(o prometheus.GaugeOpts) prometheus.Gauge {
	o.Namespace, o.Subsystem = Namespace, s.subsystem
	return keep(s, prometheus.NewGauge(o))
}

// GaugeFunc makes a gauge whose value f reads at each scrape.
func (s *Set) GaugeFunc(o prometheus.GaugeOpts, f func() float64) prometheus.GaugeFunc {
	o.Namespace, o.Subsystem = Namespace, s.subsystem
	return keep(s, prometheus.NewGaugeFunc(o, f))
}

// Histogram makes a histogram.
func (s *Set) Histogram(o prometheus.HistogramOpts) prometheus.Histogram {
	o.Namespace, o.Subsystem = Namespace, s.subsystem
	return keep(s, prometheus.NewHistogram(o))
}

// HistogramVec makes a histogram vector labelled by labels.
func (s *Set) HistogramVec(o prometheus.HistogramOpts, labels ...string) *prometheus.HistogramVec {
	o.Namespace, o.Subsystem = Namespace, s.subsystem
	return keep(s, prometheus.NewHistogramVec(o, labels))
}

// Each returns one series per value, for CounterVec's series.
func Each(values ...string) [][]string {
	out := make([][]string, len(values))
	for i, v := range values {
		out[i] = []string{v}
	}
	return out
}

// Register registers every collector made so far on reg; a nil reg
// registers nothing (tests).
func (s *Set) Register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	for _, c := range s.collectors {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register %s metrics: %w", s.subsystem, err)
		}
	}
	return nil
}
