package sweeper

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// at sleeps until d after start and lets the bubble settle.
func at(start time.Time, d time.Duration) {
	time.Sleep(time.Until(start.Add(d)))
	synctest.Wait()
}

func expectPatches(t *testing.T, f *fakeCluster, when string, want ...string) {
	t.Helper()
	if got := f.patched(); !slices.Equal(got, want) {
		t.Fatalf("%s: patched %v, want %v", when, got, want)
	}
}

// bobsCluster holds bob's managed claim on Sandbox pool-a.
func bobsCluster() *fakeCluster {
	f := newFakeCluster()
	f.addClaim("dsh-bob", "pool-a", true)
	return f
}

// sweepingBob starts a leading sweeper with options o over bobsCluster;
// the term ends with t.
func sweepingBob(t *testing.T, o Options) (*fakeCluster, *Sweeper) {
	t.Helper()
	f := bobsCluster()
	s := newTestSweeper(t, o, f)
	_, stop := startTerm(t, s)
	t.Cleanup(stop)
	return f, s
}

// touchedBy returns a node that saw bob's sandbox once and has reported
// that to s.
func touchedBy(s *Sweeper, name string) *node {
	n := newNode(name)
	n.touch("pool-a")
	s.Observe(n.report())
	return n
}

func TestIdleSandboxSuspendedAfterIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		f, s := sweepingBob(t, testOptions())
		touchedBy(s, "node-a")

		at(start, 10*time.Minute-time.Second)
		expectPatches(t, f, "just before IDLE_TIMEOUT")
		at(start, 10*time.Minute+testOptions().SweepInterval)
		expectPatches(t, f, "one sweep after IDLE_TIMEOUT", "pool-a")
		if f.mode("pool-a") != agents.OperatingModeSuspended {
			t.Error("sandbox not Suspended")
		}
		at(start, time.Hour)
		expectPatches(t, f, "an hour later", "pool-a")
		if n := testutil.ToFloat64(s.m.suspends.WithLabelValues(patchOK)); n != 1 {
			t.Errorf("suspends metric %v, want 1", n)
		}
	})
}

func TestInFlightOnOtherNodeKeepsSandbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		o := testOptions()
		f, s := sweepingBob(t, o)

		// Node A saw the sandbox once and then nothing; node B holds a long,
		// silent request (an agent thinking) and reports it every interval.
		touchedBy(s, "node-a")
		b := newNode("node-b")
		var mu sync.Mutex
		mu.Lock()
		b.work("pool-a", 1, 0)
		mu.Unlock()
		go reportEvery(t.Context(), s, b, &mu, o.ReportInterval)

		at(start, time.Hour)
		expectPatches(t, f, "while B has a request in flight")
		mu.Lock()
		b.work("pool-a", 0, 0) // the request ends: traffic, nothing in flight
		mu.Unlock()
		at(start, time.Hour+o.IdleTimeout-time.Second)
		expectPatches(t, f, "within IDLE_TIMEOUT of the request's end")
		at(start, time.Hour+o.IdleTimeout+o.ReportInterval+o.SweepInterval)
		expectPatches(t, f, "after IDLE_TIMEOUT", "pool-a")
	})
}

func TestSilentNodeCountsZero(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		o := testOptions()
		f, s := sweepingBob(t, o)

		b := newNode("node-b")
		b.work("pool-a", 1, 0) // a request began at start on B
		s.Observe(b.report())
		at(start, 9*time.Minute+40*time.Second)
		s.Observe(b.report()) // B's last report, still in flight; then B dies
		at(start, 10*time.Minute+10*time.Second)
		expectPatches(t, f, "B silent for 30s")
		at(start, 10*time.Minute+15*time.Second)
		expectPatches(t, f, "B silent for more than 3 intervals", "pool-a")
	})
}

func TestOpenWebSocket(t *testing.T) {
	for _, tt := range []struct {
		name                 string
		countOpenConnections bool
		traffic              bool
		suspended            bool
	}{
		{name: "silent, default", suspended: true},
		{name: "silent, IDLE_COUNTS_OPEN_CONNECTIONS", countOpenConnections: true},
		{name: "with data frames, default", traffic: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				o := testOptions()
				o.CountOpenConnections = tt.countOpenConnections
				f, s := sweepingBob(t, o)
				a := newNode("node-a")
				a.work("pool-a", 0, 1) // a WebSocket opened at start
				tick := time.NewTicker(o.ReportInterval)
				defer tick.Stop()
				for time.Since(start) < time.Hour && len(f.patched()) == 0 {
					if tt.traffic {
						a.touch("pool-a")
					}
					s.Observe(a.report())
					<-tick.C
				}
				synctest.Wait()
				if got := len(f.patched()) == 1; got != tt.suspended {
					t.Errorf("suspended=%v, want %v", got, tt.suspended)
				}
				if tt.suspended && time.Since(start) > o.IdleTimeout+o.ReportInterval {
					t.Errorf("suspended after %v, want within IDLE_TIMEOUT + one report interval", time.Since(start))
				}
			})
		})
	}
}

func TestNewLeaderGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		f := newFakeCluster()
		f.addClaim("dsh-bob", "pool-a", true)   // reported idle since start
		f.addClaim("dsh-carol", "pool-c", true) // never reported at all
		o := testOptions()
		first := newTestSweeper(t, o, f)
		o.Identity = Identity("authapi-1", "10.0.0.2:8081")
		second := newTestSweeper(t, o, f)
		a := newNode("node-a")
		a.touch("pool-a")

		_, stop1 := startTerm(t, first)
		first.Observe(a.report())
		at(start, 8*time.Minute)
		stop1() // the first leader goes away before the idle timeout
		if err := first.Observe(a.report()); !errors.Is(err, ErrNotLeader) {
			t.Fatalf("Observe on a stopped leader = %v, want ErrNotLeader", err)
		}
		at(start, 9*time.Minute)
		_, stop2 := startTerm(t, second)
		defer stop2()
		at(start, 9*time.Minute+time.Second)
		second.Observe(a.report()) // its first report: idle for 9 minutes

		at(start, 9*time.Minute+o.IdleTimeout-time.Second)
		expectPatches(t, f, "within IDLE_TIMEOUT of the new leader's start")
		at(start, 9*time.Minute+o.IdleTimeout+o.SweepInterval)
		got := f.patched()
		slices.Sort(got)
		if !slices.Equal(got, []string{"pool-a", "pool-c"}) {
			t.Fatalf("patched %v, want both sandboxes once", got)
		}
	})
}

func TestUnmanagedNeverTouched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeCluster()
		f.addClaim("dsh-alice", "pool-h", false) // applied by hand
		f.addSpare("pool-s")                     // warm-pool spare, no claim
		f.addClaim("dsh-dave", "pool-d", true)   // managed, but being deleted
		f.addClaim("dsh-erin", "pool-u", true)   // claim not in the cache yet
		f.addClaim("dsh-bob", "pool-m", true)    // the control: managed
		f.mu.Lock()
		for _, c := range f.claims {
			switch c.Name {
			case "dsh-dave":
				now := f.sandboxes["pool-d"].CreationTimestamp
				c.DeletionTimestamp = &now
			}
		}
		f.claims = slices.DeleteFunc(f.claims, func(c *extensions.SandboxClaim) bool { return c.Name == "dsh-erin" })
		f.mu.Unlock()
		s := newTestSweeper(t, testOptions(), f)
		_, stop := startTerm(t, s)
		defer stop()
		time.Sleep(3 * time.Hour)
		synctest.Wait()
		expectPatches(t, f, "after 3 hours", "pool-m")
	})
}

func TestWokenSandboxRestartsItsClock(t *testing.T) {
	for _, tt := range []struct {
		name   string
		wakeAt time.Duration // after the suspend
	}{
		{"woken later", time.Hour},
		{"woken before the next sweep", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				o := testOptions()
				f, _ := sweepingBob(t, o)
				at(start, o.IdleTimeout)
				expectPatches(t, f, "after IDLE_TIMEOUT", "pool-a")
				woken := start.Add(o.IdleTimeout + tt.wakeAt)
				at(woken, 0)
				// Woken, with no report yet; the Ready transition is not
				// seen either (the cache skipped it), so only the
				// sweeper's own memory restarts the clock.
				f.setMode("pool-a", agents.OperatingModeRunning)
				f.mu.Lock()
				f.sandboxes["pool-a"].Status.Conditions[0].LastTransitionTime.Time = start
				f.mu.Unlock()
				at(woken, o.IdleTimeout-time.Second)
				expectPatches(t, f, "within IDLE_TIMEOUT of the wake", "pool-a")
				at(woken, o.IdleTimeout+o.SweepInterval)
				expectPatches(t, f, "after IDLE_TIMEOUT since the wake", "pool-a", "pool-a")
			})
		})
	}
}

func TestConflictDoesNotSuspend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		f := bobsCluster()
		o := testOptions()
		// The cache lags: the sweeper sees an old resourceVersion, as when a
		// wake lands between the list and the patch.
		s := staleSweeper(t, o, f, f)
		f.setMode("pool-a", agents.OperatingModeRunning)
		_, stop := startTerm(t, s)
		defer stop()
		at(start, o.IdleTimeout+o.SweepInterval)
		expectPatches(t, f, "with a stale cache")
		if n := testutil.ToFloat64(s.m.suspends.WithLabelValues(patchConflict)); n == 0 {
			t.Error("no conflict counted")
		}
	})
}

// staleLister serves a frozen copy of the Sandboxes.
type staleLister struct {
	*fakeCluster
	sandboxes []*agents.Sandbox
}

func (s *staleLister) Sandboxes() []*agents.Sandbox { return s.sandboxes }

// staleSweeper is a sweeper whose cache keeps the Sandboxes f holds now,
// whatever happens to them later, and whose suspends go through p.
func staleSweeper(t *testing.T, o Options, f *fakeCluster, p patcher) *Sweeper {
	t.Helper()
	s, err := newSweeper(o, &staleLister{fakeCluster: f, sandboxes: f.Sandboxes()}, p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLapsedLeaseStopsPatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		f := bobsCluster()
		o := testOptions()
		s := newTestSweeper(t, o, f)
		// A term whose renewals stop (API server unreachable): it still
		// runs, but may not act past RenewDeadline.
		tm := &term{s: s}
		tm.renewed(start)
		done := make(chan struct{})
		go func() { tm.lead(t.Context()); close(done) }()
		at(start, o.IdleTimeout+time.Minute)
		expectPatches(t, f, "with a lapsed lease")
		tm.renewed(time.Now())
		at(start, o.IdleTimeout+time.Minute+o.SweepInterval)
		expectPatches(t, f, "after a renewal", "pool-a")
		tm.fence()
		<-done
	})
}

func TestFenceWaitsForSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		f := bobsCluster()
		f.addClaim("dsh-carol", "pool-c", true)
		f.block = make(chan struct{})
		o := testOptions()
		s := newTestSweeper(t, o, f)
		tm, stop := startTerm(t, s)
		defer stop()
		at(start, o.IdleTimeout) // the sweep is now inside its first patch
		fenced := make(chan struct{})
		go func() { tm.fence(); close(fenced) }()
		synctest.Wait()
		select {
		case <-fenced:
			t.Fatal("fence returned while a patch was in flight")
		default:
		}
		close(f.block) // the patch completes even though the context ended
		synctest.Wait()
		select {
		case <-fenced:
		default:
			t.Fatal("fence did not return after the sweep stopped")
		}
		if s.Leading() {
			t.Error("still leading after fence")
		}
		before := len(f.patched())
		if before > 1 {
			t.Errorf("%d patches, want at most the one in flight", before)
		}
		at(start, 2*time.Hour)
		if len(f.patched()) != before {
			t.Error("patched after fence")
		}
		// A late OnStartedLeading of a fenced term never sweeps.
		late := make(chan struct{})
		go func() { tm.lead(t.Context()); close(late) }()
		synctest.Wait()
		if s.Leading() {
			t.Error("a fenced term started leading")
		}
		tm.fence()
		<-late
	})
}

// countingPatcher counts the suspend calls that reach the cluster.
type countingPatcher struct {
	patcher
	calls atomic.Int64
}

func (c *countingPatcher) Suspend(ctx context.Context, name, rv string) error {
	c.calls.Add(1)
	return c.patcher.Suspend(ctx, name, rv)
}

func TestStaleCacheNotPatchedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		f := bobsCluster()
		o := testOptions()
		// The cache never sees the suspend land (a slow watch).
		p := &countingPatcher{patcher: f}
		s := staleSweeper(t, o, f, p)
		_, stop := startTerm(t, s)
		defer stop()
		at(start, time.Hour)
		expectPatches(t, f, "after an hour", "pool-a")
		if n := p.calls.Load(); n != 1 {
			t.Errorf("%d suspend calls, want 1: the stale Running copy was retried", n)
		}
	})
}

func TestOverdueNodeHoldsOffSuspend(t *testing.T) {
	for _, tt := range []struct {
		name string
		// late is when node B's overdue report arrives, after its report at
		// 9m40s; zero: never (B died).
		late time.Duration
		// traffic: the late report carries traffic from 10m01s.
		traffic   bool
		suspendBy time.Duration
	}{
		{"late report with traffic keeps it", 10*time.Minute + 8*time.Second, true, 0},
		{"late report without traffic lets it go", 10*time.Minute + 8*time.Second, false, 10*time.Minute + 8*time.Second + 5*time.Second},
		{"dead node delays the suspend until it counts as silent", 0, false, 10*time.Minute + 15*time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				o := testOptions()
				f, s := sweepingBob(t, o)
				a, b := touchedBy(s, "node-a"), newNode("node-b")
				var mu sync.Mutex
				ctx, stopA := context.WithCancel(t.Context())
				defer stopA()
				go reportEvery(ctx, s, a, &mu, o.ReportInterval)
				for d := time.Duration(0); d <= 9*time.Minute+40*time.Second; d += o.ReportInterval {
					at(start, d)
					s.Observe(b.report())
				}
				at(start, 10*time.Minute+5*time.Second)
				expectPatches(t, f, "B overdue: idleness unproven")
				if n := testutil.ToFloat64(s.m.heldOff); n < 1 {
					t.Errorf("held-off suspends metric %v while B is overdue", n)
				}
				if tt.late > 0 {
					at(start, 10*time.Minute+time.Second)
					if tt.traffic {
						b.touch("pool-a")
					}
					at(start, tt.late)
					s.Observe(b.report())
				}
				if tt.suspendBy == 0 {
					at(start, 15*time.Minute)
					expectPatches(t, f, "traffic in the late report")
					return
				}
				at(start, tt.suspendBy-time.Second)
				if tt.late == 0 {
					expectPatches(t, f, "B not yet silent")
				}
				at(start, tt.suspendBy+o.SweepInterval)
				expectPatches(t, f, "after the hold-off", "pool-a")
			})
		})
	}
}
