package sweeper

import (
	"sync"
	"time"

	"github.com/sandgate/sandgate/internal/activity"
)

// State is what the Aggregator knows about one sandbox.
type State struct {
	// LastActivity is the newest activity any node reported, on this
	// replica's clock; zero when no report mentioned the sandbox.
	LastActivity time.Time
	// InFlight and WebSockets sum the latest reports of the live nodes.
	InFlight   int64
	WebSockets int64
}

// Aggregator merges the activity reports of all nodes. It is safe for
// concurrent use. Its memory is bounded by the live nodes' latest reports
// plus one time per sandbox that Retain keeps.
type Aggregator struct {
	lateAfter, silentAfter time.Duration

	mu    sync.Mutex
	nodes map[string]*nodeState
	last  map[activity.Key]time.Time
}

type nodeState struct {
	received time.Time
	busy     map[activity.Key]work // only entries with open work
}

type work struct{ inFlight, webSockets int64 }

// NewAggregator returns an empty Aggregator for nodes that report every
// reportInterval.
func NewAggregator(reportInterval time.Duration) *Aggregator {
	return &Aggregator{
		lateAfter:   reportInterval + reportInterval/2,
		silentAfter: SilentIntervals * reportInterval,
		nodes:       make(map[string]*nodeState), last: make(map[activity.Key]time.Time),
	}
}

// Observe merges a report received at the given time. The report's latest
// activity is moved onto this replica's clock by its age at sending
// (SentAt - LastActivity), so node clock skew does not matter and transit
// time only makes activity look newer. The report replaces its node's
// previous in-flight counts.
func (a *Aggregator) Observe(r activity.Report, received time.Time) {
	busy := make(map[activity.Key]work)
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, e := range r.Entries {
		k := e.Key()
		if e.InFlight > 0 || e.OpenWebSockets > 0 {
			w := busy[k]
			busy[k] = work{inFlight: w.inFlight + e.InFlight, webSockets: w.webSockets + e.OpenWebSockets}
		}
		if e.LastActivity <= 0 {
			continue
		}
		at := received.Add(-time.Duration(max(r.SentAt-e.LastActivity, 0)) * time.Millisecond)
		if at.After(a.last[k]) {
			a.last[k] = at
		}
	}
	a.nodes[r.Node] = &nodeState{received: received, busy: busy}
}

// State returns what is known about k at now.
func (a *Aggregator) State(k activity.Key, now time.Time) State {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := State{LastActivity: a.last[k]}
	for _, n := range a.nodes {
		if now.Sub(n.received) > a.silentAfter {
			continue
		}
		w := n.busy[k]
		s.InFlight += w.inFlight
		s.WebSockets += w.webSockets
	}
	return s
}

// Lagging names a node whose latest report is overdue (more than one and
// a half intervals old) but which is not yet silent: its sandboxes may
// have had traffic since, so idleness is unproven until it reports or
// falls silent. It returns "" when every live node is current.
func (a *Aggregator) Lagging(now time.Time) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	for name, n := range a.nodes {
		if age := now.Sub(n.received); age > a.lateAfter && age <= a.silentAfter {
			return name
		}
	}
	return ""
}

// Retain forgets the activity of sandboxes keep rejects (they are gone) and
// the nodes silent for longer than SilentIntervals report intervals.
func (a *Aggregator) Retain(keep func(activity.Key) bool, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k := range a.last {
		if !keep(k) {
			delete(a.last, k)
		}
	}
	for name, n := range a.nodes {
		if now.Sub(n.received) > a.silentAfter {
			delete(a.nodes, name)
		}
	}
}

// Reset forgets everything; a new leadership term starts from it.
func (a *Aggregator) Reset() {
	a.mu.Lock()
	defer a.mu.Unlock()
	clear(a.nodes)
	clear(a.last)
}
