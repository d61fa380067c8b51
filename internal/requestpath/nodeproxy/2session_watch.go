package nodeproxy

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/openset"
)

// AccountWatcher tells the proxy when a user's account may have changed
// (a claim added, updated or deleted), once Lookup shows the change.
// changed runs on the watcher's goroutine and must not block. When the
// Directory implements it, as *informer.Index does, open WebSockets and
// streams check their session again on every such change.
type AccountWatcher interface {
	WatchAccount(user string, changed func()) (stop func())
}

// heldSession is the credential an open WebSocket or streamed response was
// authenticated with: copies, kept to check it again while the connection
// lasts. A zero method (the auth API's routes) holds nothing.
type heldSession struct {
	user   string
	method string     // methodCookie or methodBearer
	claims jwt.Claims // a session's id, epoch and auth time
	bearer string     // an API client's token
	// keySets is Options.KeySetsReplaced as it was before the session
	// was verified.
	keySets uint64
}

// holdSession remembers what x authenticated with; keySets is the count of
// replaced key sets read before it was verified.
func holdSession(x *exchange, id identity, keySets uint64) {
	x.session = heldSession{user: x.route.user, method: id.method, claims: id.claims, bearer: id.bearer, keySets: keySets}
}

// watcher ends open WebSockets and streams whose session ends while they
// are open. Built once by New, it belongs to the session stage.
type watcher struct {
	directory Directory
	keySets   func() uint64 // Options.KeySetsReplaced
	now       func() time.Time
	age       sessionAge
	afterFunc func(time.Duration, func()) (stop func() bool)
	// accounts is the Directory as an AccountWatcher, or nil.
	accounts AccountWatcher
	// watches are the open WebSockets' and streams' session watches.
	watches openset.Set[*sessionWatch]
	m       *metrics
	log     *slog.Logger
}

// recheck applies the request path's rules (checkBearer, sessionLive) to
// s again, against the account as the Directory holds it now. The token's
// own expiry is not checked: requests renew a session, and a connection
// outlives many renewals; revocation, a raised epoch, a new claim (recreate),
// a deleted account, a rotated bearer token, the maximum age and a signing
// key reset (a session cookie's keys replaced) end it.
func (w *watcher) recheck(s heldSession) error {
	entry, err := w.directory.Lookup(s.user)
	switch s.method {
	case methodBearer:
		return checkBearer(entry, err, s.bearer)
	case methodCookie:
		switch {
		case err != nil:
			return fmt.Errorf("%w: %w", ErrUnauthenticated, err)
		case s.keySets != w.keySets():
			return fmt.Errorf("%w: %w", ErrUnauthenticated, errReplaced)
		case !w.age.live(entry.Account, s.claims, w.now()):
			return fmt.Errorf("%w: %w", ErrUnauthenticated, errEnded)
		}
	}
	return nil
}

// sessionWatch ends an open WebSocket or stream once its session ends: it
// checks again on every change of the user's account (AccountWatcher)
// and when the session reaches its maximum age (a timer).
type sessionWatch struct {
	w    *watcher
	s    heldSession
	kind string // websocket or stream, for the log
	end  func() // closes the connection; run once, on a goroutine of its own
	over atomic.Bool

	mu        sync.Mutex
	stopped   bool
	stopWatch func()
	stopTimer func() bool
}

// Kinds of watched connections, for the log.
const (
	watchWebSocket = "websocket"
	watchStream    = "stream"
)

// afterFunc runs f after d on its own goroutine; stop cancels it.
// Options.afterFunc replaces it in tests.
func afterFunc(d time.Duration, f func()) (stop func() bool) {
	return time.AfterFunc(d, f).Stop
}

// session starts watching the session x authenticated with, and
// checks it once at once: the account may have changed since. It returns
// nil for a connection that holds no session; stop ends the watch.
func (w *watcher) session(x *exchange, kind string, end func()) *sessionWatch {
	if x.session.method != methodCookie && x.session.method != methodBearer {
		return nil
	}
	sw := &sessionWatch{w: w, s: x.session, kind: kind, end: end}
	w.watches.Add(sw)
	if w.accounts != nil {
		stop := w.accounts.WatchAccount(sw.s.user, sw.check)
		sw.mu.Lock()
		sw.stopWatch = stop
		sw.mu.Unlock()
	}
	if sw.s.method == methodCookie {
		sw.arm()
	}
	sw.check()
	return sw
}

// checkAll checks every open WebSocket's and stream's session again.
func (w *watcher) checkAll() {
	for _, sw := range w.watches.Members() {
		sw.check()
	}
}

// check ends the connection if the session no longer passes.
func (sw *sessionWatch) check() {
	if sw.over.Load() {
		return
	}
	err := sw.w.recheck(sw.s)
	if err == nil || !sw.over.CompareAndSwap(false, true) {
		return
	}
	sw.w.m.auth.WithLabelValues(sw.s.method, authEnded).Inc()
	sw.w.log.Info("session ended: closing its open connection", "kind", sw.kind, "user", sw.s.user, "method", sw.s.method, "err", err)
	go sw.end()
}

// arm sets the timer for the session's maximum age.
func (sw *sessionWatch) arm() {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.stopped {
		return
	}
	d := sw.w.age.deadline(sw.s.claims).Sub(sw.w.now())
	sw.stopTimer = sw.w.afterFunc(max(d, 0), sw.deadline)
}

// deadline runs at the maximum age: a clock that disagrees with the
// timer's gets the rest of the time.
func (sw *sessionWatch) deadline() {
	sw.check()
	if !sw.over.Load() {
		sw.arm()
	}
}

// stop ends the watch once the connection has ended; nil is fine.
func (sw *sessionWatch) stop() {
	if sw == nil {
		return
	}
	sw.over.Store(true)
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.stopped {
		return
	}
	sw.stopped = true
	sw.w.watches.Remove(sw)
	if sw.stopWatch != nil {
		sw.stopWatch()
	}
	if sw.stopTimer != nil {
		sw.stopTimer()
	}
}
