package sweeper

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
)

// Sandbox states of the sandboxes gauge; nothing else is ever used.
const (
	stateReady     = "ready"     // managed, Running and Ready
	stateStarting  = "starting"  // managed, Running, not Ready yet (or waking)
	stateSuspended = "suspended" // managed, Suspended
	stateFailed    = "failed"    // managed, its pod stopped for good (agents.Terminated) or its configuration rejected (agents.InvalidConfiguration)
	stateDeleting  = "deleting"  // being deleted
	stateUnmanaged = "unmanaged" // warm-pool spares and hand-made claims' sandboxes
)

var sandboxStates = []string{stateReady, stateStarting, stateSuspended, stateFailed, stateDeleting, stateUnmanaged}

// inventory counts accounts and sandboxes from the sweeper's caches at
// each scrape, on every replica: the caches are warm whether or not the
// replica leads, so a dashboard takes the max over replicas.
type inventory struct {
	src       lister
	users     *prometheus.Desc
	sandboxes *prometheus.Desc
}

func newInventory(src lister) inventory {
	return inventory{
		src: src,
		users: prometheus.NewDesc("sandgate_sweeper_users",
			"Accounts: managed SandboxClaims not being deleted, as this replica's cache holds them.", nil, nil),
		sandboxes: prometheus.NewDesc("sandgate_sweeper_sandboxes",
			"Sandboxes in the namespace by state: ready, starting, suspended, failed (pod stopped for good, or configuration rejected: InvalidConfiguration), deleting, unmanaged (warm-pool spares, hand-made claims).",
			[]string{"state"}, nil),
	}
}

func (i inventory) Describe(ch chan<- *prometheus.Desc) {
	ch <- i.users
	ch <- i.sandboxes
}

func (i inventory) Collect(ch chan<- prometheus.Metric) {
	claims := i.src.Claims()
	users := 0
	for _, c := range claims {
		if account.Managed(c) && c.DeletionTimestamp == nil {
			users++
		}
	}
	ch <- prometheus.MustNewConstMetric(i.users, prometheus.GaugeValue, float64(users))
	counts := make(map[string]int, len(sandboxStates))
	own := indexOwners(claims)
	for _, sb := range i.src.Sandboxes() {
		counts[sandboxState(sb, own)]++
	}
	for _, s := range sandboxStates {
		ch <- prometheus.MustNewConstMetric(i.sandboxes, prometheus.GaugeValue, float64(counts[s]), s)
	}
}

// sandboxState is sb's state label.
func sandboxState(sb *agents.Sandbox, own owners) string {
	switch {
	case sb.DeletionTimestamp != nil:
		return stateDeleting
	case !own.managed(sb):
		return stateUnmanaged
	case sb.Spec.OperatingMode == agents.OperatingModeSuspended:
		return stateSuspended
	case agents.Terminated(sb), agents.Invalid(sb):
		return stateFailed
	case meta.IsStatusConditionTrue(sb.Status.Conditions, agents.ConditionReady):
		return stateReady
	default:
		return stateStarting
	}
}
