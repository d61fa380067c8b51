package sweeper

import (
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/activity"
)

var keyA = activity.Key{Namespace: ns, Name: "a"}

func entry(name string, ageMS, inFlight, ws int64, sentAt int64) activity.Entry {
	return activity.Entry{Namespace: ns, Sandbox: name, LastActivity: sentAt - ageMS, InFlight: inFlight, OpenWebSockets: ws}
}

func TestAggregatorMovesActivityOntoOwnClock(t *testing.T) {
	a := NewAggregator(10 * time.Second)
	now := time.Unix(1_000_000, 0)
	// The node's clock is an hour behind; only the age counts.
	sent := now.Add(-time.Hour).UnixMilli()
	a.Observe(activity.Report{Node: "n1", SentAt: sent, Entries: []activity.Entry{entry("a", 5000, 0, 0, sent)}}, now)
	if got, want := a.State(keyA, now).LastActivity, now.Add(-5*time.Second); !got.Equal(want) {
		t.Errorf("last activity %v, want %v", got, want)
	}
	// An older observation never moves it back.
	a.Observe(activity.Report{Node: "n2", SentAt: sent, Entries: []activity.Entry{entry("a", 60000, 0, 0, sent)}}, now)
	if got, want := a.State(keyA, now).LastActivity, now.Add(-5*time.Second); !got.Equal(want) {
		t.Errorf("last activity %v after an older report, want %v", got, want)
	}
	// Activity stamped after sending (a clock oddity) counts as "now".
	a.Observe(activity.Report{Node: "n1", SentAt: sent, Entries: []activity.Entry{entry("a", -9000, 0, 0, sent)}}, now.Add(time.Second))
	if got, want := a.State(keyA, now).LastActivity, now.Add(time.Second); !got.Equal(want) {
		t.Errorf("last activity %v, want %v", got, want)
	}
}

func TestAggregatorInFlight(t *testing.T) {
	a := NewAggregator(10 * time.Second)
	t0 := time.Unix(1_000_000, 0)
	ms := t0.UnixMilli()
	a.Observe(activity.Report{Node: "n1", SentAt: ms, Entries: []activity.Entry{entry("a", 0, 2, 1, ms)}}, t0)
	a.Observe(activity.Report{Node: "n2", SentAt: ms, Entries: []activity.Entry{entry("a", 0, 1, 0, ms)}}, t0)
	if s := a.State(keyA, t0); s.InFlight != 3 || s.WebSockets != 1 {
		t.Errorf("state %+v, want the sum of both nodes: 3 in flight, 1 WebSocket", s)
	}
	// n1's next report no longer lists a: its counts are replaced.
	a.Observe(activity.Report{Node: "n1", SentAt: ms + 10000}, t0.Add(10*time.Second))
	if s := a.State(keyA, t0.Add(10*time.Second)); s.InFlight != 1 || s.WebSockets != 0 {
		t.Errorf("state %+v, want only n2's request", s)
	}
	// n2 stays silent: it counts for 3 intervals, then no more.
	if s := a.State(keyA, t0.Add(30*time.Second)); s.InFlight != 1 {
		t.Errorf("n2 silent for 3 intervals: in flight %d, want 1", s.InFlight)
	}
	if s := a.State(keyA, t0.Add(30*time.Second+time.Millisecond)); s.InFlight != 0 {
		t.Errorf("n2 silent for longer than 3 intervals: in flight %d, want 0", s.InFlight)
	}
}

// TestAggregatorModelTokens: today's model tokens are summed over the
// nodes that report them for today; another day's count does not count.
func TestAggregatorModelTokens(t *testing.T) {
	a := NewAggregator(10 * time.Second)
	t0 := time.Date(2026, 12, 7, 23, 59, 50, 0, time.UTC)
	today, ms := t0.Unix()/86400, t0.UnixMilli()
	tokens := func(n, day int64) activity.Entry {
		e := entry("a", 0, 0, 0, ms)
		e.ModelTokens, e.ModelTokensDay = n, day
		return e
	}
	a.Observe(activity.Report{Node: "n1", SentAt: ms, Entries: []activity.Entry{tokens(300, today)}}, t0)
	a.Observe(activity.Report{Node: "n2", SentAt: ms, Entries: []activity.Entry{tokens(40, today)}}, t0)
	a.Observe(activity.Report{Node: "n3", SentAt: ms, Entries: []activity.Entry{tokens(5000, today-1)}}, t0)
	if got := a.State(keyA, t0).ModelTokens; got != 340 {
		t.Errorf("model tokens today %d, want 340 (n1 and n2)", got)
	}
	if got := a.State(keyA, t0.Add(10*time.Second)).ModelTokens; got != 0 {
		t.Errorf("model tokens after midnight %d, want 0", got)
	}
}

func TestAggregatorRetainAndReset(t *testing.T) {
	a := NewAggregator(10 * time.Second)
	t0 := time.Unix(1_000_000, 0)
	ms := t0.UnixMilli()
	a.Observe(activity.Report{Node: "n1", SentAt: ms, Entries: []activity.Entry{entry("a", 0, 1, 0, ms), entry("gone", 0, 0, 0, ms)}}, t0)
	a.Retain(func(k activity.Key) bool { return k == keyA }, t0)
	if s := a.State(activity.Key{Namespace: ns, Name: "gone"}, t0); !s.LastActivity.IsZero() {
		t.Error("a gone sandbox's activity was kept")
	}
	if s := a.State(keyA, t0); s.LastActivity.IsZero() || s.InFlight != 1 {
		t.Errorf("a kept sandbox lost its state: %+v", s)
	}
	a.Retain(func(activity.Key) bool { return true }, t0.Add(time.Minute))
	if len(a.nodes) != 0 {
		t.Error("a node silent for a minute was kept")
	}
	a.Reset()
	if s := a.State(keyA, t0); s != (State{}) {
		t.Errorf("state after Reset %+v", s)
	}
}
