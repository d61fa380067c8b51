package nodeproxy

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/internal/jwt"
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

// recheck applies the request path's rules (checkBearer, sessionLive) to
// s again, against the account as the Directory holds it now. The token's
// own expiry is not checked: requests renew a session, and a connection
// outlives many renewals; revocation, a raised epoch, a new claim (recreate),
// a deleted account, a rotated bearer token, the maximum age and a signing
// key reset (a session cookie's keys replaced) end it.
func (p *Proxy) recheck(s heldSession) error {
	entry, err := p.opts.Directory.Lookup(s.user)
	switch s.method {
	case methodBearer:
		return checkBearer(entry, err, s.bearer)
	case methodCookie:
		switch {
		case err != nil:
			return fmt.Errorf("%w: %w", ErrUnauthenticated, err)
		case s.keySets != p.opts.KeySetsReplaced():
			return fmt.Errorf("%w: %w", ErrUnauthenticated, errReplaced)
		case !p.sessionLive(entry.Account, s.claims, p.opts.Now()):
			return fmt.Errorf("%w: %w", ErrUnauthenticated, errEnded)
		}
	}
	return nil
}

// sessionWatch ends an open WebSocket or stream once its session ends: it
// checks again on every change of the user's account (AccountWatcher)
// and when the session reaches its maximum age (a timer).
type sessionWatch struct {
	p    *Proxy
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

// watchSession starts watching the session x authenticated with, and
// checks it once at once: the account may have changed since. It returns
// nil for a connection that holds no session; stop ends the watch.
func (p *Proxy) watchSession(x *exchange, kind string, end func()) *sessionWatch {
	if x.session.method != methodCookie && x.session.method != methodBearer {
		return nil
	}
	w := &sessionWatch{p: p, s: x.session, kind: kind, end: end}
	p.watches.Add(w)
	if p.accounts != nil {
		stop := p.accounts.WatchAccount(w.s.user, w.check)
		w.mu.Lock()
		w.stopWatch = stop
		w.mu.Unlock()
	}
	if w.s.method == methodCookie {
		w.arm()
	}
	w.check()
	return w
}

// KeysReplaced checks every open WebSocket's and stream's session again
// once Options.KeySetsReplaced has grown, so those of session cookies
// verified with the replaced keys end (with 4401) within the node proxy's
// JWKS fetch of a signing key reset; the verifier's key source calls it
// (jwt.FetcherOptions.OnReplaced).
func (p *Proxy) KeysReplaced() {
	for _, w := range p.watches.Members() {
		w.check()
	}
}

// check ends the connection if the session no longer passes.
func (w *sessionWatch) check() {
	if w.over.Load() {
		return
	}
	err := w.p.recheck(w.s)
	if err == nil || !w.over.CompareAndSwap(false, true) {
		return
	}
	w.p.m.auth.WithLabelValues(w.s.method, authEnded).Inc()
	w.p.log.Info("session ended: closing its open connection", "kind", w.kind, "user", w.s.user, "method", w.s.method, "err", err)
	go w.end()
}

// arm sets the timer for the session's maximum age.
func (w *sessionWatch) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	d := w.p.sessionDeadline(w.s.claims).Sub(w.p.opts.Now())
	w.stopTimer = w.p.opts.afterFunc(max(d, 0), w.deadline)
}

// deadline runs at the maximum age: a clock that disagrees with the
// timer's gets the rest of the time.
func (w *sessionWatch) deadline() {
	w.check()
	if !w.over.Load() {
		w.arm()
	}
}

// stop ends the watch once the connection has ended; nil is fine.
func (w *sessionWatch) stop() {
	if w == nil {
		return
	}
	w.over.Store(true)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	w.stopped = true
	w.p.watches.Remove(w)
	if w.stopWatch != nil {
		w.stopWatch()
	}
	if w.stopTimer != nil {
		w.stopTimer()
	}
}
