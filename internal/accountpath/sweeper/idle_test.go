package sweeper

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
)

// TestDueAt: the idle rule counts IDLE_TIMEOUT from the latest of the
// newest activity, the term's first sighting and the Ready transition,
// and open work holds it.
func TestDueAt(t *testing.T) {
	base := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	at := func(min int) time.Time { return base.Add(time.Duration(min) * time.Minute) }
	const timeout = 10 * time.Minute
	for _, tc := range []struct {
		name                     string
		state                    State
		firstSeen, ready         time.Time
		countConnections, wantOK bool
		want                     time.Time
	}{
		{name: "activity latest", state: State{LastActivity: at(30)}, firstSeen: at(10), ready: at(5), wantOK: true, want: at(40)},
		{name: "adopted: first seen latest", state: State{LastActivity: at(1)}, firstSeen: at(20), ready: at(0), wantOK: true, want: at(30)},
		{name: "woken: Ready latest", firstSeen: at(10), ready: at(25), wantOK: true, want: at(35)},
		{name: "no report yet", firstSeen: at(3), wantOK: true, want: at(13)},
		{name: "request in flight", state: State{LastActivity: at(1), InFlight: 1}, firstSeen: at(1), wantOK: false},
		{name: "WebSocket, not counted", state: State{LastActivity: at(2), WebSockets: 1}, firstSeen: at(1), wantOK: true, want: at(12)},
		{name: "WebSocket, counted", state: State{LastActivity: at(2), WebSockets: 1}, firstSeen: at(1), countConnections: true, wantOK: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Sweeper{opts: Options{IdleTimeout: timeout, CountOpenConnections: tc.countConnections}}
			sb := &agents.Sandbox{}
			if !tc.ready.IsZero() {
				sb.Status.Conditions = []metav1.Condition{{Type: agents.ConditionReady, Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(tc.ready)}}
			}
			due, ok := s.dueAt(tc.state, tc.firstSeen, sb)
			if ok != tc.wantOK || !due.Equal(tc.want) {
				t.Errorf("dueAt = %v, %v; want %v, %v", due, ok, tc.want, tc.wantOK)
			}
		})
	}
}

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
		if got := s.Idle(sandbox(), time.Now()); got.Exact || !got.At.Equal(ready.Add(o.IdleTimeout)) || got.IdleTimeout != o.IdleTimeout {
			t.Fatalf("not leading: %+v; want the earliest time, IDLE_TIMEOUT after Ready", got)
		}

		time.Sleep(3 * time.Minute)
		_, stop := startTerm(t, s)
		defer stop()
		synctest.Wait()
		seen := time.Now()
		if got := s.Idle(sandbox(), time.Now()); !got.Exact || got.Busy || !got.At.Equal(seen.Add(o.IdleTimeout)) {
			t.Fatalf("leading, first seen %v: %+v; want IDLE_TIMEOUT after the term first saw it", seen, got)
		}

		time.Sleep(time.Minute)
		a := newNode("node-a")
		a.touch("pool-a")
		used := time.Now()
		s.Observe(a.report())
		got := s.Idle(sandbox(), time.Now())
		if !got.Exact || !got.LastActive.Equal(used) || !got.At.Equal(used.Add(o.IdleTimeout)) {
			t.Fatalf("after a use at %v: %+v; want suspension IDLE_TIMEOUT later", used, got)
		}

		a.work("pool-a", 1, 0)
		s.Observe(a.report())
		if got := s.Idle(sandbox(), time.Now()); !got.Busy || !got.At.IsZero() {
			t.Fatalf("with a request open: %+v; want busy, no time", got)
		}
		a.work("pool-a", 0, 0)
		s.Observe(a.report())
		due := s.Idle(sandbox(), time.Now()).At
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
