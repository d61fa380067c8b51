package sweeper

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
)

// TestIdleIsTheSweepRule: what Idle tells an account page is when the
// sweep suspends: on a replica that does not lead, the earliest time
// (IDLE_TIMEOUT after Ready); on the leader, for a sandbox adopted after
// the term began, IDLE_TIMEOUT after the term first saw it (not after its
// Ready, which came before), then after its last use, none while a
// request is open; and the sweep suspends it at that time, not before.
func TestIdleIsTheSweepRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := testOptions()
		f := newFakeCluster()
		f.addSpare("pool-a")
		sandbox := func() *agents.Sandbox {
			for _, sb := range f.Sandboxes() {
				if sb.Name == "pool-a" {
					return sb
				}
			}
			t.Fatal("no sandbox pool-a")
			return nil
		}
		s := newTestSweeper(t, o, f)
		f.addClaim("dsh-bob", "pool-a", true)
		ready := time.Now()
		if got := s.Idle(nil, sandbox(), time.Now()); got.Exact || !got.At.Equal(ready.Add(o.IdleTimeout)) || got.IdleTimeout != o.IdleTimeout {
			t.Fatalf("not leading: %+v; want the earliest time, IDLE_TIMEOUT after Ready", got)
		}

		time.Sleep(3 * time.Minute)
		_, stop := startTerm(t, s)
		defer stop()
		synctest.Wait()
		seen := time.Now()
		if got := s.Idle(nil, sandbox(), time.Now()); !got.Exact || got.At.IsZero() || !got.At.Equal(seen.Add(o.IdleTimeout)) {
			t.Fatalf("leading, first seen %v: %+v; want IDLE_TIMEOUT after the term first saw it", seen, got)
		}

		time.Sleep(time.Minute)
		a := newNode("node-a")
		a.touch("pool-a")
		used := time.Now()
		s.Observe(a.report())
		got := s.Idle(nil, sandbox(), time.Now())
		if !got.Exact || !got.LastActive.Equal(used) || !got.At.Equal(used.Add(o.IdleTimeout)) {
			t.Fatalf("after a use at %v: %+v; want suspension IDLE_TIMEOUT later", used, got)
		}

		a.work("pool-a", 1, 0)
		s.Observe(a.report())
		if got := s.Idle(nil, sandbox(), time.Now()); got.Reason != ReasonRequest || !got.At.IsZero() || got.Suspend {
			t.Fatalf("with a request open: %+v; want busy, no time", got)
		}
		a.work("pool-a", 0, 0)
		s.Observe(a.report())
		due := s.Idle(nil, sandbox(), time.Now()).At
		var mu sync.Mutex
		go reportEvery(t.Context(), s, a, &mu, o.ReportInterval)
		time.Sleep(time.Until(due) - time.Second)
		synctest.Wait()
		if m := f.mode("pool-a"); m != agents.OperatingModeRunning {
			t.Fatalf("suspended before the time Idle gave (%v): %s", due, m)
		}
		time.Sleep(time.Second + o.SweepInterval)
		synctest.Wait()
		if m := f.mode("pool-a"); m != agents.OperatingModeSuspended {
			t.Fatalf("not suspended one sweep after the time Idle gave (%v): %s", due, m)
		}
	})
}
