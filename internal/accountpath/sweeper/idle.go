package sweeper

import (
	"time"

	"github.com/sandgate/sandgate/internal/activity"
)

// Idle tells an account page when sandbox k was last used and when the
// sweep will suspend it if it stays unused. Only the leader aggregates
// reports, so ok is false on other replicas and for a sandbox no report
// has mentioned yet. suspendAt is zero while the sandbox has open work.
func (s *Sweeper) Idle(k activity.Key, now time.Time) (lastActive, suspendAt time.Time, ok bool) {
	if !s.Leading() {
		return time.Time{}, time.Time{}, false
	}
	a := s.agg.State(k, now)
	if a.LastActivity.IsZero() {
		return time.Time{}, time.Time{}, false
	}
	if a.InFlight > 0 || (s.opts.CountOpenConnections && a.WebSockets > 0) {
		return a.LastActivity, time.Time{}, true
	}
	return a.LastActivity, a.LastActivity.Add(s.opts.IdleTimeout), true
}
