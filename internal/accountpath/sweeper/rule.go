package sweeper

import "time"

// Inputs is everything the idle rule reads about one Running sandbox under
// a managed claim. Times are on this replica's clock; zero means unknown
// or never.
type Inputs struct {
	Now         time.Time
	IdleTimeout time.Duration
	// State is the nodes' reports, merged (Aggregator.State).
	State State
	// CountWebSockets is IDLE_COUNTS_OPEN_CONNECTIONS: an open WebSocket,
	// silent or not, is work.
	CountWebSockets bool
	// FirstSeen is when this leadership term first saw the sandbox
	// Running: a new leader's grace, as it holds no reports from before.
	FirstSeen time.Time
	// ReadySince is the Ready condition's last transition (a wake).
	ReadySince time.Time
	// KeepAwakeUntil is the owner's own "keep awake" from the account page.
	KeepAwakeUntil time.Time
	// AllowanceLeft is what remains of the owner's daily busy allowance:
	// how long the agent's busy declarations may still keep it awake.
	AllowanceLeft time.Duration
}

// Reason says why the rule decided as it did. The values are stable: they
// appear in metrics, audit lines and the account page.
type Reason string

// The rule's reasons. The first group keeps a sandbox awake with no time
// known; the second until Decision.At; the last two suspend it.
const (
	ReasonRequest   Reason = "request"    // a browser request in flight
	ReasonWebSocket Reason = "websocket"  // an open WebSocket (IDLE_COUNTS_OPEN_CONNECTIONS)
	ReasonModelCall Reason = "model-call" // a model call in flight

	ReasonActivity  Reason = "activity"   // recent browser traffic
	ReasonModel     Reason = "model"      // a recent model call
	ReasonWoken     Reason = "woken"      // became Ready recently
	ReasonGrace     Reason = "grace"      // a new leader's grace period
	ReasonKeepAwake Reason = "keep-awake" // the owner asked to keep it awake
	ReasonBusy      Reason = "busy"       // the agent declared itself busy

	ReasonIdle          Reason = "idle"           // nothing kept it awake for IdleTimeout
	ReasonAllowanceUsed Reason = "allowance-used" // busy, but its owner's daily allowance is spent
)

// Decision is the rule's answer.
type Decision struct {
	// Suspend: suspend it now.
	Suspend bool
	// At is when it will be suspended if nothing changes; zero while open
	// work keeps it awake. When Suspend, when it became due.
	At time.Time
	// Reason is what keeps it awake, or why it is suspended.
	Reason Reason
	// UsesAllowance: only the agent's busy declaration keeps it awake, so
	// the time counts against its owner's daily allowance.
	UsesAllowance bool
}

// Decide is the idle rule, the one the sweep applies and account pages
// show. Open work keeps a sandbox awake with no end known: a browser
// request, a model call, or an open WebSocket where they count. Otherwise
// it is due IdleTimeout after the latest of its last activity (browser
// traffic or a model call), its last wake and the term's first sight of
// it, or at the end of its owner's keep-awake if that is later. Once due,
// an agent's busy declaration keeps it awake until the declaration ends or
// the owner's allowance runs out, whichever is first.
func Decide(in Inputs) Decision {
	s := in.State
	switch {
	case s.InFlight > s.ModelCalls:
		return Decision{Reason: ReasonRequest}
	case in.CountWebSockets && s.WebSockets > 0:
		return Decision{Reason: ReasonWebSocket}
	case s.ModelCalls > 0:
		return Decision{Reason: ReasonModelCall}
	}
	clock, why := s.LastActivity, ReasonActivity
	if !s.LastModelCall.Before(s.LastActivity) && !s.LastModelCall.IsZero() {
		why = ReasonModel
	}
	for _, c := range []struct {
		at time.Time
		r  Reason
	}{{in.ReadySince, ReasonWoken}, {in.FirstSeen, ReasonGrace}} {
		if c.at.After(clock) {
			clock, why = c.at, c.r
		}
	}
	due := clock.Add(in.IdleTimeout)
	if in.KeepAwakeUntil.After(due) {
		due, why = in.KeepAwakeUntil, ReasonKeepAwake
	}
	if in.Now.Before(due) {
		return Decision{At: due, Reason: why}
	}
	if s.BusyUntil.After(in.Now) {
		if in.AllowanceLeft <= 0 {
			return Decision{Suspend: true, At: due, Reason: ReasonAllowanceUsed}
		}
		end := s.BusyUntil
		if limit := in.Now.Add(in.AllowanceLeft); limit.Before(end) {
			end = limit
		}
		return Decision{At: end, Reason: ReasonBusy, UsesAllowance: true}
	}
	return Decision{Suspend: true, At: due, Reason: ReasonIdle}
}
