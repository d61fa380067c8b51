package sweeper

import (
	"log/slog"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/logbuf"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestScheduledWake: the leader wakes a suspended agent at the moment its
// owner's wake schedule names, once per moment, with an audit line; a
// running agent and a schedule that does not parse are left alone.
func TestScheduledWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now() // synctest's clock: 2000-01-01 00:00 UTC
		audit := &logbuf.Buffer{}
		o := testOptions()
		o.Audit = slog.New(slog.NewJSONHandler(audit, nil))
		f := newFakeCluster()
		f.addClaim("dsh-bob", "pool-b", true)
		f.addClaim("dsh-eve", "pool-e", true)
		f.addClaim("dsh-ann", "pool-a", true)
		f.setMode("pool-b", agents.OperatingModeSuspended)
		f.setMode("pool-e", agents.OperatingModeSuspended)
		wakeAt := start.Add(10 * time.Minute).UTC().Format("15:04")
		f.annotate("dsh-bob", account.AnnotationWakeSchedule, "daily "+wakeAt)
		f.annotate("dsh-eve", account.AnnotationWakeSchedule, "daily soon")
		f.annotate("dsh-ann", account.AnnotationWakeSchedule, "daily "+wakeAt)
		o.IdleTimeout = time.Hour
		s := newTestSweeper(t, o, f)
		_, stop := startTerm(t, s)
		defer stop()

		at(start, 10*time.Minute-time.Second)
		if f.mode("pool-b") != agents.OperatingModeSuspended {
			t.Fatalf("bob's agent woken before %s", wakeAt)
		}
		at(start, 10*time.Minute+o.SweepInterval)
		if f.mode("pool-b") != agents.OperatingModeRunning {
			t.Fatalf("bob's agent not woken one sweep after %s", wakeAt)
		}
		f.setMode("pool-b", agents.OperatingModeSuspended)
		at(start, 30*time.Minute)
		if got := f.woken(); !slices.Equal(got, []string{"pool-b"}) {
			t.Fatalf("woken %v, want bob's agent once (eve's schedule does not parse, ann's agent runs)", got)
		}
		events := testkit.AuditLines(t, audit.String())
		if len(events) != 1 || events[0]["action"] != "scheduled_wake" || events[0]["user"] != "bob" || events[0]["schedule"] != "daily "+wakeAt || events[0]["outcome"] != "ok" {
			t.Fatalf("audit events %v, want bob's scheduled_wake", events)
		}
	})
}
