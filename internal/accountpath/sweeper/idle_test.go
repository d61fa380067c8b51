package sweeper

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/sandgate/sandgate/internal/activity"
)

func TestIdleTellsLastUseAndSuspension(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := activity.Key{Namespace: ns, Name: "pool-a"}
		f := newFakeCluster()
		f.addClaim("dsh-bob", "pool-a", true)
		s := newTestSweeper(t, testOptions(), f)
		if _, _, ok := s.Idle(k, time.Now()); ok {
			t.Fatal("a replica that does not lead knows nothing, but Idle answered")
		}
		_, stop := startTerm(t, s)
		defer stop()
		synctest.Wait()
		if _, _, ok := s.Idle(k, time.Now()); ok {
			t.Fatal("no report mentioned the sandbox, but Idle answered")
		}

		a := newNode("node-a")
		a.touch("pool-a")
		used := time.Now()
		s.Observe(a.report())
		last, suspendAt, ok := s.Idle(k, time.Now())
		if !ok || !last.Equal(used) || !suspendAt.Equal(used.Add(testOptions().IdleTimeout)) {
			t.Fatalf("Idle = %v, %v, %v; want last use %v and suspension IDLE_TIMEOUT later", last, suspendAt, ok, used)
		}

		a.work("pool-a", 1, 0)
		s.Observe(a.report())
		if _, suspendAt, ok := s.Idle(k, time.Now()); !ok || !suspendAt.IsZero() {
			t.Fatalf("with a request open: suspension %v (ok %v), want none", suspendAt, ok)
		}
	})
}
