package sweeper

import (
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/logbuf"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

var invalidConfig = metav1.Condition{Type: agents.ConditionReady, Status: metav1.ConditionFalse,
	Reason: agents.ReasonInvalidConfiguration, Message: `Service "x" is invalid: metadata.name: must be no more than 63 characters`}

// TestInvalidConfigurationReportedOnce: a managed sandbox the controller
// gave up on (v1.0.4+) is neither suspended nor has a pod deleted, however
// long it idles; the leader reports it once per rejection: an audit event
// with the controller's message, an Event on the Sandbox, the counter. A
// later rejection is reported again.
func TestInvalidConfigurationReportedOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		audit := &logbuf.Buffer{}
		o, pods := podOptions()
		o.Audit = slog.New(slog.NewJSONHandler(audit, nil))
		f, s := sweepingBob(t, o)
		f.setConditions("pool-a", invalidConfig)
		at(start, time.Hour)
		expectPatches(t, f, "an hour of an invalid sandbox")
		deleted, events := pods.seen()
		if len(deleted) != 0 {
			t.Errorf("deleted pods %v of an invalid sandbox", deleted)
		}
		if len(events) != 1 || events[0].Reason != agents.ReasonInvalidConfiguration || events[0].InvolvedObject.Name != "pool-a" {
			t.Errorf("events %v", events)
		}
		if n := testutil.ToFloat64(s.m.invalid); n != 1 {
			t.Errorf("invalid configurations counted %v times, want 1", n)
		}
		lines := testkit.AuditLines(t, audit.String())
		if len(lines) != 1 || lines[0]["action"] != "invalid_configuration" || lines[0]["user"] != "bob" ||
			lines[0]["sandbox"] != "pool-a" || lines[0]["reason"] != invalidConfig.Message {
			t.Errorf("audit %v", lines)
		}

		f.setConditions("pool-a", podReady)
		at(start, 61*time.Minute)
		f.setConditions("pool-a", invalidConfig)
		at(start, 62*time.Minute)
		if n := testutil.ToFloat64(s.m.invalid); n != 2 {
			t.Errorf("a second rejection counted: %v, want 2", n)
		}
	})
}

// TestInventoryCountsInvalidAsFailed: the inventory counts a sandbox the
// controller gave up on as failed, never as starting.
func TestInventoryCountsInvalidAsFailed(t *testing.T) {
	f := bobsCluster()
	f.setConditions("pool-a", invalidConfig)
	sb := f.sandboxes["pool-a"]
	if got := sandboxState(sb, indexOwners(f.Claims())); got != stateFailed {
		t.Errorf("state %q, want %q", got, stateFailed)
	}
}
