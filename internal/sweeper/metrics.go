package sweeper

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Label values; nothing else is ever used.
const (
	suspendOK       = "ok"
	suspendConflict = "conflict"
	suspendError    = "error"

	reportAccepted = "accepted"

	reportNotLeader = "not_leader"
)

// metrics holds the sweeper's collectors, registered on the Registerer from
// Options, never globally.
type metrics struct {
	suspends *prometheus.CounterVec // label result: ok, conflict, error
	reports  *prometheus.CounterVec // label result: accepted, not_leader
	leader   prometheus.Gauge
	// heldOff counts suspends put off because a node's report was
	// overdue; a steady rise means a node proxy cannot report.
	heldOff prometheus.Counter
	// failedPods counts deletions of terminated sandbox pods, label
	// result: ok, gone, refused, error.
	failedPods *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		suspends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sandgate", Subsystem: "sweeper", Name: "suspends_total",
			Help: "Suspend patches sent by the leader, by result (conflict: the Sandbox changed since the decision).",
		}, []string{"result"}),
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sandgate", Subsystem: "sweeper", Name: "reports_total",
			Help: "Activity reports offered to this replica, by result (not_leader: to be forwarded).",
		}, []string{"result"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "sandgate", Subsystem: "sweeper", Name: "leader",
			Help: "1 while this replica leads and sweeps, else 0.",
		}),
		heldOff: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "sandgate", Subsystem: "sweeper", Name: "suspends_held_off_total",
			Help: "Idle sandboxes not suspended in a sweep because a node's activity report was overdue.",
		}),
		failedPods: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sandgate", Subsystem: "sweeper", Name: "failed_pods_deleted_total",
			Help: "Terminated (Failed or Succeeded) pods of managed sandboxes the leader deleted for the controller to recreate, by result (refused: admission found the pod not terminated).",
		}, []string{"result"}),
	}
	for _, r := range []string{failedPodDeleted, failedPodGone, failedPodRefused, failedPodError} {
		m.failedPods.WithLabelValues(r)
	}
	for _, r := range []string{suspendOK, suspendConflict, suspendError} {
		m.suspends.WithLabelValues(r)
	}
	for _, r := range []string{reportAccepted, reportNotLeader} {
		m.reports.WithLabelValues(r)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.suspends, m.reports, m.leader, m.heldOff, m.failedPods} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register sweeper metrics: %w", err)
		}
	}
	return m, nil
}
