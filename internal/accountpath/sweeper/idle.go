package sweeper

import (
	"time"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// inputs gathers what the idle rule reads about sandbox sb at k, of claim
// c, first seen by this term at first.
func (s *Sweeper) inputs(st *sweepState, k activity.Key, c *extensions.SandboxClaim, sb *agents.Sandbox, first, now time.Time) Inputs {
	return Inputs{
		Now: now, IdleTimeout: s.opts.IdleTimeout, State: s.agg.State(k, now),
		CountWebSockets: s.opts.CountOpenConnections, FirstSeen: first, ReadySince: readySince(sb),
		KeepAwakeUntil: account.KeepAwakeUntil(c), AllowanceLeft: st.allow.left(userOf(c), now),
	}
}

// Suspension is what the idle rule says of one Running sandbox, for its
// owner's account page.
type Suspension struct {
	// Decision is the rule's answer (Decide).
	Decision
	// IdleTimeout is how long without use suspends it.
	IdleTimeout time.Duration
	// LastActive is its newest reported activity; zero when unknown.
	LastActive time.Time
	// BusyUntil is the end of its agent's busy declaration; zero when it
	// has none (or this replica cannot know).
	BusyUntil time.Time
	// AllowanceLeft is what remains of its owner's busy allowance today.
	AllowanceLeft time.Duration
	// Exact reports that this replica leads the sweep: it holds the
	// activity reports and the term's memory the rule reads. Other
	// replicas know neither, and give the earliest time the rule allows
	// from the Sandbox and claim alone.
	Exact bool
}

// Idle applies the idle rule to sb of claim c at now for an account page:
// exactly on the leader, elsewhere as the earliest time it allows.
func (s *Sweeper) Idle(c *extensions.SandboxClaim, sb *agents.Sandbox, now time.Time) Suspension {
	var st *sweepState
	if t := s.leading.Load(); t != nil && s.Leading() {
		st = t.state.Load()
	}
	if st == nil {
		d := Decide(Inputs{Now: now, IdleTimeout: s.opts.IdleTimeout, ReadySince: readySince(sb), KeepAwakeUntil: account.KeepAwakeUntil(c)})
		if d.Suspend {
			d = Decision{}
		}
		return Suspension{Decision: d, IdleTimeout: s.opts.IdleTimeout}
	}
	k := activity.Key{Namespace: sb.Namespace, Name: sb.Name}
	in := s.inputs(st, k, c, sb, st.seen.at(k, sb.UID, now), now)
	return Suspension{
		Decision: Decide(in), IdleTimeout: s.opts.IdleTimeout, LastActive: in.State.LastActivity,
		BusyUntil: in.State.BusyUntil, AllowanceLeft: in.AllowanceLeft, Exact: true,
	}
}

// ModelTokensToday is how many model tokens the user of sb used today
// through the egress listeners, as the nodes report them; ok only on the
// leader, which alone receives the reports.
func (s *Sweeper) ModelTokensToday(sb *agents.Sandbox, now time.Time) (tokens int64, ok bool) {
	if t := s.leading.Load(); t == nil || !s.Leading() {
		return 0, false
	}
	return s.agg.State(activity.Key{Namespace: sb.Namespace, Name: sb.Name}, now).ModelTokens, true
}
