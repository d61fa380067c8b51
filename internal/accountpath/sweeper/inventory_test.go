package sweeper

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestInventoryGauges: users count managed claims; every sandbox lands in
// exactly one state, and every state is exported even at zero.
func TestInventoryGauges(t *testing.T) {
	f := newFakeCluster()
	f.addClaim("dsh-ann", "pool-a", true)
	f.addClaim("dsh-bob", "pool-b", true)
	f.addClaim("dsh-cid", "pool-c", true)
	f.addClaim("dsh-dee", "pool-d", true)
	f.addClaim("hand-made", "pool-x", false)
	f.addSpare("pool-s")
	f.setMode("pool-b", agents.OperatingModeSuspended)
	f.failPod("pool-c", podFailed)
	f.mu.Lock()
	f.sandboxes["pool-d"].Status.Conditions = []metav1.Condition{{Type: agents.ConditionReady, Status: metav1.ConditionFalse, Reason: agents.ReasonDependenciesNotReady}}
	f.mu.Unlock()

	reg := prometheus.NewPedanticRegistry()
	o := testOptions()
	o.Registerer = reg
	newTestSweeper(t, o, f)
	want := `
# HELP sandgate_sweeper_users Accounts: managed SandboxClaims not being deleted, as this replica's cache holds them.
# TYPE sandgate_sweeper_users gauge
sandgate_sweeper_users 4
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "sandgate_sweeper_users"); err != nil {
		t.Error(err)
	}
	for state, n := range map[string]float64{
		stateReady: 1, stateSuspended: 1, stateFailed: 1, stateStarting: 1, stateUnmanaged: 2, stateDeleting: 0,
	} {
		if got, ok := testkit.Gathered(t, reg, "sandgate_sweeper_sandboxes", map[string]string{"state": state}); !ok || got != n {
			t.Errorf("sandboxes{state=%q} = %v, want %v", state, got, n)
		}
	}
}
