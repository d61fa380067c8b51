package sweeper

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandgate/sandgate/internal/metricset"
)

// Label values; nothing else is ever used.
const (
	patchOK       = "ok"
	patchConflict = "conflict"
	patchError    = "error"

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
	// invalid counts managed sandboxes the agent-sandbox controller gave
	// up on (InvalidConfiguration), once per rejection.
	invalid prometheus.Counter
	// idleSuspends counts the suspends that succeeded, label reason: the
	// idle rule's (idle, allowance-used).
	idleSuspends *prometheus.CounterVec
	// scheduledWakes counts wakes on their owners' schedules, label result:
	// ok, conflict, error.
	scheduledWakes *prometheus.CounterVec
	// busyUsed counts the busy allowance used: seconds agents were kept
	// awake past their idle deadline by their busy declarations alone.
	busyUsed prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	s := metricset.New("sweeper")
	m := &metrics{
		suspends: s.CounterVec(prometheus.CounterOpts{
			Name: "suspends_total", Help: "Suspend patches sent by the leader, by result (conflict: the Sandbox changed since the decision).",
		}, []string{"result"}, metricset.Each(patchOK, patchConflict, patchError)...),
		reports: s.CounterVec(prometheus.CounterOpts{
			Name: "reports_total", Help: "Activity reports offered to this replica, by result (not_leader: to be forwarded).",
		}, []string{"result"}, metricset.Each(reportAccepted, reportNotLeader)...),
		leader: s.Gauge(prometheus.GaugeOpts{
			Name: "leader", Help: "1 while this replica leads and sweeps, else 0.",
		}),
		heldOff: s.Counter(prometheus.CounterOpts{
			Name: "suspends_held_off_total", Help: "Idle sandboxes not suspended in a sweep because a node's activity report was overdue.",
		}),
		failedPods: s.CounterVec(prometheus.CounterOpts{
			Name: "failed_pods_deleted_total", Help: "Terminated (Failed or Succeeded) pods of managed sandboxes the leader deleted for the controller to recreate, by result (refused: admission found the pod not terminated).",
		}, []string{"result"}, metricset.Each(failedPodDeleted, failedPodGone, failedPodRefused, failedPodError)...),
		idleSuspends: s.CounterVec(prometheus.CounterOpts{
			Name: "idle_suspends_total", Help: "Sandboxes the leader suspended, by the idle rule's reason (allowance-used: still declared busy, but its owner's daily busy allowance was spent).",
		}, []string{"reason"}, metricset.Each(string(ReasonIdle), string(ReasonAllowanceUsed))...),
		scheduledWakes: s.CounterVec(prometheus.CounterOpts{
			Name: "scheduled_wakes_total", Help: "Suspended sandboxes the leader woke on their owners' wake schedules, by result (conflict: the Sandbox changed first).",
		}, []string{"result"}, metricset.Each(patchOK, patchConflict, patchError)...),
		busyUsed: s.Counter(prometheus.CounterOpts{
			Name: "busy_allowance_used_seconds_total", Help: "Seconds agents were kept awake past their idle deadline only by their busy declarations (BUSY_ALLOWANCE is the daily allowance per user).",
		}),
		invalid: s.Counter(prometheus.CounterOpts{
			Name: "invalid_configurations_total", Help: "Managed sandboxes the agent-sandbox controller gave up on for good (Ready reason InvalidConfiguration), counted once per rejection by the leader; each needs an operator.",
		}),
	}
	if err := s.Register(reg); err != nil {
		return nil, err
	}
	return m, nil
}
