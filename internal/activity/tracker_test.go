package activity

import (
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	keyA = Key{Namespace: "ns", Name: "a"}
	keyB = Key{Namespace: "ns", Name: "b"}
)

func TestTrackerCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(Options{})
		start := time.Now()
		tr.Begin(keyA)
		tr.Begin(keyA)
		tr.Begin(keyB)
		time.Sleep(time.Second)
		tr.End(keyA)
		tr.Upgrade(keyB) // b's request became a WebSocket
		time.Sleep(time.Second)
		tr.Traffic(keyB)
		want := []Entry{
			{Namespace: "ns", Sandbox: "a", LastActivity: start.Add(time.Second).UnixMilli(), InFlight: 1},
			{Namespace: "ns", Sandbox: "b", LastActivity: start.Add(2 * time.Second).UnixMilli(), OpenWebSockets: 1},
		}
		if diff := cmp.Diff(want, tr.Snapshot()); diff != "" {
			t.Errorf("snapshot (-want +got):\n%s", diff)
		}
		tr.End(keyA)
		tr.EndWebSocket(keyB)
		for _, e := range tr.Snapshot() {
			if e.InFlight != 0 || e.OpenWebSockets != 0 {
				t.Errorf("%s still has open work: %+v", e.Key(), e)
			}
		}
	})
}

func TestTrackerRetention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(Options{Retention: time.Minute})
		tr.Begin(keyA) // stays in flight: never dropped
		tr.Traffic(keyB)
		time.Sleep(time.Minute)
		got := tr.Snapshot()
		if len(got) != 1 || got[0].Sandbox != "a" {
			t.Fatalf("after retention got %+v, want only the in-flight entry", got)
		}
		tr.End(keyA)
		time.Sleep(59 * time.Second)
		if tr.Snapshot(); tr.Len() != 1 {
			t.Fatal("entry dropped before its retention")
		}
		time.Sleep(time.Second)
		if tr.Snapshot(); tr.Len() != 0 {
			t.Fatal("idle entry kept past its retention")
		}
	})
}

// TestTrackerKeepsTodaysModelTokens: an entry with model tokens counted
// today is reported with them past its retention, until the UTC day ends;
// then it goes.
func TestTrackerKeepsTodaysModelTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(Options{Retention: time.Minute})
		now := time.Now()
		midnight := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
		tr.ModelTokens(keyA, now.Unix()/86400, 1234)
		time.Sleep(time.Until(midnight) - time.Second)
		got := tr.Snapshot()
		if len(got) != 1 || got[0].ModelTokens != 1234 || got[0].ModelTokensDay != now.Unix()/86400 {
			t.Fatalf("a second before midnight: %+v, want today's 1234 tokens", got)
		}
		time.Sleep(time.Second)
		if got := tr.Snapshot(); len(got) != 0 {
			t.Fatalf("after midnight: %+v, want the entry gone", got)
		}
	})
}

// signalled reports whether tr's Changed has a signal waiting, taking it.
func signalled(tr *Tracker) bool {
	select {
	case <-tr.Changed():
		return true
	default:
		return false
	}
}

// TestTrackerChangedAfterQuiet: activity of every kind on a sandbox silent
// for Quiet signals Changed (a turn may start with a frame on a silent
// WebSocket as well as with a request); activity within Quiet of the last
// does not.
func TestTrackerChangedAfterQuiet(t *testing.T) {
	const quiet = 10 * time.Second
	kinds := []struct {
		name  string
		setup func(*Tracker) // the open work act needs, then silence
		act   func(*Tracker)
	}{
		{"begin", func(tr *Tracker) { tr.Traffic(keyA) }, func(tr *Tracker) { tr.Begin(keyA) }},
		{"end", func(tr *Tracker) { tr.Begin(keyA) }, func(tr *Tracker) { tr.End(keyA) }},
		{"body traffic", func(tr *Tracker) { tr.Begin(keyA) }, func(tr *Tracker) { tr.Traffic(keyA) }},
		{"frame on a silent WebSocket", func(tr *Tracker) { tr.Begin(keyA); tr.Upgrade(keyA) }, func(tr *Tracker) { tr.Traffic(keyA) }},
		{"upgrade", func(tr *Tracker) { tr.Begin(keyA) }, func(tr *Tracker) { tr.Upgrade(keyA) }},
		{"WebSocket close", func(tr *Tracker) { tr.Begin(keyA); tr.Upgrade(keyA) }, func(tr *Tracker) { tr.EndWebSocket(keyA) }},
	}
	for _, k := range kinds {
		for _, tc := range []struct {
			silence time.Duration
			want    bool
		}{{quiet / 2, false}, {quiet, true}} {
			t.Run(fmt.Sprintf("%s after %v", k.name, tc.silence), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					tr := New(Options{Quiet: quiet})
					k.setup(tr)
					if !signalled(tr) {
						t.Fatal("first activity on an unknown sandbox did not signal")
					}
					time.Sleep(tc.silence)
					k.act(tr)
					if got := signalled(tr); got != tc.want {
						t.Errorf("signalled %v, want %v", got, tc.want)
					}
				})
			})
		}
	}
}

func TestTrackerChangedCoalesced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(Options{Quiet: 10 * time.Second})
		tr.Traffic(keyA)
		tr.Traffic(keyB)
		if !signalled(tr) || signalled(tr) {
			t.Error("want exactly one coalesced signal for two unknown sandboxes")
		}
		time.Sleep(10 * time.Second)
		tr.Begin(keyA)
		tr.Traffic(keyB)
		if !signalled(tr) || signalled(tr) {
			t.Error("want exactly one coalesced signal after a quiet period")
		}
	})
}

func TestTrackerConcurrent(t *testing.T) {
	tr := New(Options{})
	var wg sync.WaitGroup
	for i := range 8 {
		k := keyA
		if i%2 == 1 {
			k = keyB
		}
		wg.Go(func() {
			for range 1000 {
				tr.Begin(k)
				tr.Traffic(k)
				tr.End(k)
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			for _, e := range tr.Snapshot() {
				if e.InFlight < 0 || e.InFlight > 4 {
					t.Errorf("in flight %d outside 0..4", e.InFlight)
				}
			}
		}
	})
	wg.Wait()
	for _, e := range tr.Snapshot() {
		if e.InFlight != 0 {
			t.Errorf("%s: %d in flight after all ended", e.Key(), e.InFlight)
		}
	}
}

func TestTrackerHotPathDoesNotAllocate(t *testing.T) {
	tr := New(Options{})
	k := Key{Namespace: "sandgate", Name: "dsh-pool-x7k2p"}
	tr.Traffic(k)
	if n := testing.AllocsPerRun(100, func() {
		tr.Begin(k)
		tr.Traffic(k)
		tr.Upgrade(k)
		tr.EndWebSocket(k)
	}); n != 0 {
		t.Errorf("%v allocations per request on a known sandbox, want 0", n)
	}
}

func BenchmarkTrackerRequest(b *testing.B) {
	tr := New(Options{})
	keys := make([]Key, 64)
	for i := range keys {
		keys[i] = Key{Namespace: "sandgate", Name: "dsh-pool-" + string(rune('a'+i%26)) + string(rune('a'+i/26))}
		tr.Traffic(keys[i])
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			k := keys[i%len(keys)]
			tr.Begin(k)
			tr.Traffic(k)
			tr.End(k)
			i++
		}
	})
}

// TestTrackerModelCallsAndBusy: a model call is a request in flight and
// counted apart with its time; a busy declaration is reported as it stands
// without being traffic, asks for an early report, keeps its entry while
// it lasts, and "done" withdraws it.
func TestTrackerModelCallsAndBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(Options{Retention: time.Minute})
		start := time.Now()
		tr.BeginModelCall(keyA)
		time.Sleep(time.Second)
		want := []Entry{{Namespace: "ns", Sandbox: "a", LastActivity: start.UnixMilli(), InFlight: 1, ModelCalls: 1, LastModelCall: start.UnixMilli()}}
		if diff := cmp.Diff(want, tr.Snapshot()); diff != "" {
			t.Errorf("mid-call snapshot (-want +got):\n%s", diff)
		}
		tr.EndModelCall(keyA)
		end := time.Now()
		signalled(tr)
		tr.Busy(keyB, end.Add(2*time.Minute))
		if !signalled(tr) {
			t.Error("a busy declaration did not ask for an early report")
		}
		want = []Entry{
			{Namespace: "ns", Sandbox: "a", LastActivity: end.UnixMilli(), LastModelCall: end.UnixMilli()},
			{Namespace: "ns", Sandbox: "b", BusyUntil: end.Add(2 * time.Minute).UnixMilli()},
		}
		if diff := cmp.Diff(want, tr.Snapshot()); diff != "" {
			t.Errorf("after the call, b busy (-want +got):\n%s", diff)
		}
		time.Sleep(90 * time.Second)
		if got := tr.Snapshot(); len(got) != 1 || got[0].Sandbox != "b" {
			t.Fatalf("past a's retention got %+v, want only b, still busy", got)
		}
		tr.Busy(keyB, time.Time{})
		if got := tr.Snapshot(); len(got) != 0 {
			t.Fatalf("after b said done got %+v, want nothing", got)
		}
	})
}
