package sweeper

import (
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sandgate/sandgate/internal/testing/logbuf"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestSuspendIsAudited: the leader's suspend of an idle sandbox is one
// audit event naming the user, the sandbox, the outcome and the replica,
// on the audit stream and not in the main log.
func TestSuspendIsAudited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		audit, logs := &logbuf.Buffer{}, &logbuf.Buffer{}
		o := testOptions()
		o.Audit = slog.New(slog.NewJSONHandler(audit, nil))
		o.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		f, _ := sweepingBob(t, o)
		at(start, time.Hour)
		expectPatches(t, f, "an hour later", "pool-a")

		events := testkit.AuditLines(t, audit.String())
		if len(events) != 1 {
			t.Fatalf("%d audit events for one suspend: %v", len(events), events)
		}
		want := map[string]any{"msg": "audit", "action": "suspend", "user": "bob", "sandbox": "pool-a",
			"outcome": "ok", "replica": "authapi-0", "auth": "leader", "client": ""}
		for k, v := range want {
			if events[0][k] != v {
				t.Errorf("audit %s = %v, want %v", k, events[0][k], v)
			}
		}
		if n := len(testkit.AuditLines(t, logs.String())); n != 0 {
			t.Errorf("%d audit events in the main log", n)
		}
	})
}
