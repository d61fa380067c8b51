package sweeper

import (
	"time"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
)

// dueAt is the idle rule, the one the sweep applies and account pages
// show: a Running sandbox under a managed claim is suspended IdleTimeout
// after the latest of its newest reported activity a.LastActivity, the
// moment this term first saw it Running (firstSeen), and its Ready
// condition's last transition. While it has open work (a request in
// flight, or with CountOpenConnections an open WebSocket) it is not due
// at all: ok is false.
func (s *Sweeper) dueAt(a State, firstSeen time.Time, sb *agents.Sandbox) (due time.Time, ok bool) {
	if a.InFlight > 0 || (s.opts.CountOpenConnections && a.WebSockets > 0) {
		return time.Time{}, false
	}
	return latest(a.LastActivity, firstSeen, readySince(sb)).Add(s.opts.IdleTimeout), true
}

// Suspension is what the idle rule says of one Running sandbox, for its
// owner's account page.
type Suspension struct {
	// IdleTimeout is how long without use suspends it.
	IdleTimeout time.Duration
	// LastActive is its newest reported activity; zero when unknown.
	LastActive time.Time
	// At is when the sweep suspends it if it stays unused (the first
	// sweep at or after it): the rule's answer when Exact, else the
	// earliest it can be, from the Sandbox alone; zero when Busy, or
	// when not Exact and the Sandbox has no Ready condition.
	At time.Time
	// Busy reports open work: it is not suspended while that lasts.
	Busy bool
	// Exact reports that this replica leads the sweep: it holds the
	// activity reports and the term's memory the rule reads. Other
	// replicas know neither.
	Exact bool
}

// Idle applies the idle rule (dueAt) to sb at now for an account page:
// exactly on the leader, elsewhere as the earliest time it allows.
func (s *Sweeper) Idle(sb *agents.Sandbox, now time.Time) Suspension {
	out := Suspension{IdleTimeout: s.opts.IdleTimeout}
	t := s.leading.Load()
	var st *sweepState
	if t != nil && s.Leading() {
		st = t.state.Load()
	}
	if st == nil {
		if r := readySince(sb); !r.IsZero() {
			out.At = r.Add(s.opts.IdleTimeout)
		}
		return out
	}
	k := activity.Key{Namespace: sb.Namespace, Name: sb.Name}
	a := s.agg.State(k, now)
	due, ok := s.dueAt(a, st.seen.at(k, sb.UID, now), sb)
	return Suspension{IdleTimeout: s.opts.IdleTimeout, LastActive: a.LastActivity, At: due, Busy: !ok, Exact: true}
}
