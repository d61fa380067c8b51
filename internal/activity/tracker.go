package activity

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults that New applies to zero Options fields.
const (
	// DefaultRetention is how long an entry with no open work outlives its
	// last traffic.
	DefaultRetention = time.Hour
	// DefaultQuiet is how long a sandbox must have been silent for new
	// activity on it to ask the Reporter for an early report.
	DefaultQuiet = 10 * time.Second
)

// touchResolution bounds how often one entry's clock is written: a busy
// WebSocket's frames then mostly read a cache line instead of bouncing it
// between cores. It is far below any idle timeout.
const touchResolution = int64(50 * time.Millisecond)

// Key names a sandbox: the Sandbox object's namespace and name (the name
// informer.Route.Sandbox carries, not the claim's).
type Key struct {
	Namespace string
	Name      string
}

// String returns "namespace/name".
func (k Key) String() string { return k.Namespace + "/" + k.Name }

// Options configures a Tracker.
type Options struct {
	// Retention drops an entry that has had no open work and no traffic for
	// this long, so sandboxes that are gone leave the table. The leader
	// keeps the newest activity it has seen, so nothing it needs is lost.
	Retention time.Duration
	// Quiet: activity of any kind (a request, body bytes, a WebSocket
	// frame, upgrade or close) on a sandbox silent for at least this long
	// signals Changed, so the leader learns of new work on a sandbox that
	// may be near its idle timeout without waiting a whole report
	// interval: a turn can start with a request or with a frame on a
	// WebSocket open but silent since. Activity after a silence longer
	// than IDLE_TIMEOUT - REPORT_INTERVAL could otherwise meet a suspend
	// before its report arrives, so keep Quiet at most that.
	Quiet time.Duration
}

// Tracker is a node's activity table. Its methods are safe for concurrent
// use and, once a sandbox has an entry, take a read lock and update atomics
// without allocating.
//
// Begin/End bracket every proxied HTTP request; a request that becomes a
// WebSocket calls Upgrade after the 101 (instead of End) and EndWebSocket
// when the WebSocket closes. Every End, Upgrade or EndWebSocket must follow a
// Begin (or Upgrade) for the same key: an entry with open work is never
// dropped, so the pair always meets the same entry.
type Tracker struct {
	retention int64
	quiet     int64
	changed   chan struct{}

	mu sync.RWMutex
	m  map[Key]*entry
}

type entry struct {
	last       atomic.Int64 // unix nanoseconds of the last traffic
	inFlight   atomic.Int64
	webSockets atomic.Int64
	lastModel  atomic.Int64 // unix nanoseconds of the last model call's start or end
	modelCalls atomic.Int64 // of inFlight, the model calls
	busyUntil  atomic.Int64 // unix nanoseconds the agent said it is busy until; 0: not busy
	// tokens is the user's model tokens on UTC day tokensDay, as the
	// egress listener last counted them.
	tokens, tokensDay atomic.Int64
}

// delta is one event's change to an entry.
type delta struct {
	req, ws, model int64
	modelTouch     bool // a model call started or ended
}

// New returns an empty Tracker.
func New(o Options) *Tracker {
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.Quiet <= 0 {
		o.Quiet = DefaultQuiet
	}
	return &Tracker{
		retention: int64(o.Retention), quiet: int64(o.Quiet),
		changed: make(chan struct{}, 1), m: make(map[Key]*entry),
	}
}

// Begin records the start of an HTTP request to k: one more in flight, and
// traffic.
func (t *Tracker) Begin(k Key) { t.update(k, delta{req: 1}) }

// End records the end of an HTTP request to k: one fewer in flight, and
// traffic.
func (t *Tracker) End(k Key) { t.update(k, delta{req: -1}) }

// Traffic records body bytes or a WebSocket data frame for k.
func (t *Tracker) Traffic(k Key) { t.update(k, delta{}) }

// Upgrade turns one in-flight request to k into an open WebSocket, after
// the upgrade succeeded. The WebSocket is counted before the request is
// uncounted, so a concurrent Snapshot never sees neither.
func (t *Tracker) Upgrade(k Key) { t.update(k, delta{req: -1, ws: 1}) }

// EndWebSocket records that a WebSocket to k closed: one fewer open, and
// traffic.
func (t *Tracker) EndWebSocket(k Key) { t.update(k, delta{ws: -1}) }

// BeginModelCall records the start of a model call the sandbox k made
// through the egress listener: a request in flight, counted apart as a
// model call too, so the leader can say why the sandbox is awake.
func (t *Tracker) BeginModelCall(k Key) { t.update(k, delta{req: 1, model: 1, modelTouch: true}) }

// EndModelCall records the end of a model call BeginModelCall recorded.
func (t *Tracker) EndModelCall(k Key) { t.update(k, delta{req: -1, model: -1, modelTouch: true}) }

// Busy records that the agent in k declared itself busy until the given
// time; the zero time withdraws the declaration ("done"). A declaration is
// not traffic: it keeps the sandbox awake only as the leader's busy rule
// allows (a bounded daily allowance), so renewing it cannot restart the
// idle clock. It always asks for an early report.
func (t *Tracker) Busy(k Key, until time.Time) {
	var ns int64
	if !until.IsZero() {
		ns = until.UnixNano()
	}
	t.mu.Lock()
	e := t.m[k]
	if e == nil {
		e = new(entry)
		t.m[k] = e
	}
	e.busyUntil.Store(ns)
	t.mu.Unlock()
	t.signal()
}

// ModelTokens records that k's user has used tokens model tokens through
// the egress listener on UTC day day (days since 1970-01-01); the entry is
// kept, and reported, until that day ends.
func (t *Tracker) ModelTokens(k Key, day, tokens int64) {
	t.mu.RLock()
	if e := t.m[k]; e != nil {
		e.tokens.Store(tokens)
		e.tokensDay.Store(day)
		t.mu.RUnlock()
		return
	}
	t.mu.RUnlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.m[k]
	if e == nil {
		e = new(entry)
		t.m[k] = e
	}
	e.tokens.Store(tokens)
	e.tokensDay.Store(day)
}

// Changed is signalled (without blocking, coalesced) on activity of any
// kind on a sandbox that had been silent for Options.Quiet or was unknown.
// The Reporter listens to it to send an early report.
func (t *Tracker) Changed() <-chan struct{} { return t.changed }

func (t *Tracker) update(k Key, d delta) {
	now := time.Now().UnixNano()
	t.mu.RLock()
	if e := t.m[k]; e != nil {
		t.apply(e, now, d)
		t.mu.RUnlock()
		return
	}
	t.mu.RUnlock()
	t.mu.Lock()
	e := t.m[k]
	if e == nil {
		e = new(entry)
		t.m[k] = e
	}
	t.apply(e, now, d)
	t.mu.Unlock()
}

// apply runs under either lock: entries are only removed under the write
// lock and only without open work, so e is still in the table.
func (t *Tracker) apply(e *entry, now int64, d delta) {
	if d.ws != 0 {
		e.webSockets.Add(d.ws)
	}
	if d.req != 0 {
		e.inFlight.Add(d.req)
	}
	if d.model != 0 {
		e.modelCalls.Add(d.model)
	}
	if d.modelTouch {
		e.lastModel.Store(now)
	}
	prev := e.last.Load()
	if now-prev < touchResolution {
		return
	}
	e.last.Store(now)
	if now-prev >= t.quiet {
		t.signal()
	}
}

func (t *Tracker) signal() {
	select {
	case t.changed <- struct{}{}:
	default:
	}
}

// Snapshot returns the table, sorted by key, and drops entries that have had
// no open work and no traffic for Options.Retention.
func (t *Tracker) Snapshot() []Entry {
	now := time.Now().UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Entry, 0, len(t.m))
	for k, e := range t.m {
		last, req, ws := e.last.Load(), max(e.inFlight.Load(), 0), max(e.webSockets.Load(), 0)
		busy := e.busyUntil.Load()
		day := e.tokensDay.Load()
		today := day == now/int64(24*time.Hour)
		if req == 0 && ws == 0 && now-last >= t.retention && busy <= now && !today {
			delete(t.m, k)
			continue
		}
		entry := Entry{
			Namespace: k.Namespace, Sandbox: k.Name, LastActivity: millis(last),
			InFlight: req, OpenWebSockets: ws,
			ModelCalls: min(max(e.modelCalls.Load(), 0), req), LastModelCall: millis(e.lastModel.Load()),
			BusyUntil: millis(busy),
		}
		if today {
			entry.ModelTokens, entry.ModelTokensDay = e.tokens.Load(), day
		}
		out = append(out, entry)
	}
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Sandbox, b.Sandbox))
	})
	return out
}

// millis converts unix nanoseconds to the report's unix milliseconds,
// keeping 0 for "never".
func millis(ns int64) int64 {
	if ns <= 0 {
		return 0
	}
	return time.Unix(0, ns).UnixMilli()
}

// Len returns the number of entries.
func (t *Tracker) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.m)
}
