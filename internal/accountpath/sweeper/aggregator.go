package sweeper

import (
	"maps"
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
	// ModelCalls sums the model calls in flight (counted in InFlight too).
	ModelCalls int64
	// LastModelCall is the newest model call start or end reported, on
	// this replica's clock; zero when none.
	LastModelCall time.Time
	// BusyUntil is the latest busy declaration the live nodes report, on
	// this replica's clock; zero when none.
	BusyUntil time.Time
	// ModelTokens sums the model tokens its user used today (UTC, by the
	// leader's clock) through the egress listeners of the nodes reporting.
	ModelTokens int64
}

// Aggregator merges the activity reports of all nodes. It is safe for
// concurrent use. Its memory is bounded by the live nodes' latest reports
// plus one time per sandbox that Retain keeps.
type Aggregator struct {
	lateAfter, silentAfter time.Duration

	mu        sync.Mutex
	nodes     map[string]*nodeState
	last      map[activity.Key]time.Time
	lastModel map[activity.Key]time.Time
}

type nodeState struct {
	received time.Time
	busy     map[activity.Key]work // only entries with open work or a busy declaration
	tokens   map[activity.Key]dayTokens
}

// dayTokens is a node's count of model tokens on one UTC day.
type dayTokens struct{ day, tokens int64 }

type work struct {
	inFlight, webSockets, modelCalls int64
	busyUntil                        time.Time
}

// NewAggregator returns an empty Aggregator for nodes that report every
// reportInterval.
func NewAggregator(reportInterval time.Duration) *Aggregator {
	return &Aggregator{
		lateAfter:   reportInterval + reportInterval/2,
		silentAfter: SilentIntervals * reportInterval,
		nodes:       make(map[string]*nodeState), last: make(map[activity.Key]time.Time),
		lastModel: make(map[activity.Key]time.Time),
	}
}

// Observe merges a report received at the given time. The report's latest
// activity is moved onto this replica's clock by its age at sending
// (SentAt - LastActivity), so node clock skew does not matter and transit
// time only makes activity look newer. The report replaces its node's
// previous in-flight counts and busy declarations. A busy declaration is
// moved onto this clock by its distance from SentAt.
func (a *Aggregator) Observe(r activity.Report, received time.Time) {
	busy := make(map[activity.Key]work)
	tokens := make(map[activity.Key]dayTokens)
	onClock := func(ms int64) time.Time { return received.Add(time.Duration(ms-r.SentAt) * time.Millisecond) }
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, e := range r.Entries {
		k := e.Key()
		if e.InFlight > 0 || e.OpenWebSockets > 0 || e.BusyUntil > r.SentAt {
			w := busy[k]
			w.inFlight += e.InFlight
			w.webSockets += e.OpenWebSockets
			w.modelCalls += e.ModelCalls
			if e.BusyUntil > r.SentAt {
				w.busyUntil = latest(w.busyUntil, onClock(e.BusyUntil))
			}
			busy[k] = w
		}
		if e.LastActivity > 0 {
			a.last[k] = latest(a.last[k], onClock(min(e.LastActivity, r.SentAt)))
		}
		if e.LastModelCall > 0 {
			a.lastModel[k] = latest(a.lastModel[k], onClock(min(e.LastModelCall, r.SentAt)))
		}
		if e.ModelTokens > 0 {
			tokens[k] = dayTokens{day: e.ModelTokensDay, tokens: e.ModelTokens}
		}
	}
	a.nodes[r.Node] = &nodeState{received: received, busy: busy, tokens: tokens}
}

// State returns what is known about k at now.
func (a *Aggregator) State(k activity.Key, now time.Time) State {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := State{LastActivity: a.last[k], LastModelCall: a.lastModel[k]}
	for _, n := range a.nodes {
		if now.Sub(n.received) > a.silentAfter {
			continue
		}
		w := n.busy[k]
		s.InFlight += w.inFlight
		s.WebSockets += w.webSockets
		s.ModelCalls += w.modelCalls
		s.BusyUntil = latest(s.BusyUntil, w.busyUntil)
		if t := n.tokens[k]; t.day == now.UTC().Unix()/86400 {
			s.ModelTokens += t.tokens
		}
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
	gone := func(k activity.Key, _ time.Time) bool { return !keep(k) }
	maps.DeleteFunc(a.last, gone)
	maps.DeleteFunc(a.lastModel, gone)
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
	clear(a.lastModel)
}
