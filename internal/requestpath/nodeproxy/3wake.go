package nodeproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/valyala/fasthttp"
	"golang.org/x/sync/singleflight"

	"github.com/sandgate/sandgate/internal/informer"
)

// Wake results, the values of the wakes metric's label.
const (
	wakeReady   = "ready"   // the held request went on to its sandbox
	wakeTimeout = "timeout" // WAKE_TIMEOUT passed first
	wakePage    = "page"    // pageHold passed first: a navigation, answered with the waking page
	wakeFailed  = "error"   // the account went away or the proxy shut down
)

// wakePageRefresh is how often the waking page reloads itself, seconds.
const wakePageRefresh = 3

// waker is the wake stage (awaitReady), and asks the auth API to wake
// sandboxes: one call per sandbox while a
// wake is under way (WakeTimeout), however many requests wait for it. It
// remembers each user's last failed call for the waking page, and a
// refusal is not asked again within RetryAfter: the requests meanwhile get
// the same refusal, so no client (a page reloaded by hand, an app's
// reconnecting stream) makes the auth API refuse it over and over.
type waker struct {
	waiter  Waiter // nil: wake-on-connect is off
	m       *metrics
	log     *slog.Logger
	api     *authClient
	path    string
	timeout time.Duration
	retry   time.Duration
	now     func() time.Time
	group   singleflight.Group

	mu       sync.Mutex
	called   map[string]time.Time // wake key -> when its call succeeded
	failures *simplelru.LRU[string, wakeFailure]
	// pending is len(called) + failures.Len(), so that requests to Ready
	// sandboxes skip the lock while nothing is remembered.
	pending atomic.Int32
	// pages times the waits the waking page reports, and so tells when
	// one has outlasted WakeTimeout.
	pages wakeClock
}

// maxWakeFailures bounds the failed calls the waker remembers: the oldest
// are forgotten first.
const maxWakeFailures = 4096

func newWaker(o Options, api *authClient, m *metrics, log *slog.Logger) *waker {
	failures, _ := simplelru.NewLRU[string, wakeFailure](maxWakeFailures, nil) // the size is positive
	return &waker{waiter: o.Waiter, m: m, log: log, api: api, path: o.WakePath, timeout: o.WakeTimeout, retry: o.RetryAfter, now: o.Now,
		called: map[string]time.Time{}, failures: failures}
}

// failureKind says how a wake call failed.
type failureKind uint8

const (
	notFailed failureKind = iota
	// refused: the auth API answered, with neither 2xx nor 5xx.
	refused
	// unanswered: no auth API replica answered (or one answered 5xx), or
	// the call could not be made.
	unanswered
)

// wakeFailure is how a user's last wake call failed; the zero value is
// none.
type wakeFailure struct {
	kind   failureKind
	status int // the refusal's status
	at     time.Time
}

// wakeRefusedError is a wake call the auth API answered with a refusal.
type wakeRefusedError struct{ status int }

func (e *wakeRefusedError) Error() string {
	return fmt.Sprintf("%s: wake answered %d", ErrUpstream, e.status)
}

func (e *wakeRefusedError) Is(target error) bool { return target == ErrUpstream }

func wakeKey(user, sandbox string) string {
	if sandbox != "" {
		return "s/" + sandbox
	}
	return "u/" + user
}

// wake asks the auth API once to wake user's sandbox, unless a call for
// the same sandbox succeeded within the wake timeout and has not finished,
// or user's last call was refused within RetryAfter (that refusal again).
func (w *waker) wake(user, sandbox string) error {
	key := wakeKey(user, sandbox)
	if known, err := w.known(key, user); known {
		return err
	}
	_, err, _ := w.group.Do(key, func() (any, error) {
		if known, err := w.known(key, user); known {
			return nil, err
		}
		err := w.post(user)
		w.record(key, user, err)
		return nil, err
	})
	return err
}

// known reports whether the call for key need not be made, and then its
// answer: nil for a call that succeeded within the wake timeout, the
// refusal of one refused within RetryAfter.
func (w *waker) known(key, user string) (bool, error) {
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if t, ok := w.called[key]; ok && now.Sub(t) < w.timeout {
		return true, nil
	}
	if f, ok := w.failures.Peek(user); ok && f.kind == refused && now.Sub(f.at) < w.retry {
		return true, &wakeRefusedError{status: f.status}
	}
	return false, nil
}

// record remembers how the call for key, made for user, ended: a success
// until the wake timeout, a failure as user's last.
func (w *waker) record(key, user string, err error) {
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		f := wakeFailure{kind: unanswered, at: now}
		if r, ok := errors.AsType[*wakeRefusedError](err); ok {
			f.kind, f.status = refused, r.status
		}
		w.failures.Add(user, f)
	} else {
		w.failures.Remove(user)
		for k, t := range w.called {
			if now.Sub(t) >= w.timeout {
				delete(w.called, k)
			}
		}
		w.called[key] = now
	}
	w.pending.Store(int32(len(w.called) + w.failures.Len()))
}

// state is what the waker knows of user's wake of sandbox: whether its
// call succeeded within the wake timeout, and user's last failed call.
func (w *waker) state(user, sandbox string) (asked bool, f wakeFailure) {
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.called[wakeKey(user, sandbox)]
	f, _ = w.failures.Peek(user)
	return ok && now.Sub(t) < w.timeout, f
}

// woke ends the wakes of a user's sandbox the informer now sees Ready
// (called before and after adoption), so that its next suspension is met
// by a new call, and forgets the user's last failure.
func (w *waker) woke(user, sandbox string) {
	if w.pending.Load() == 0 {
		return
	}
	w.mu.Lock()
	delete(w.called, wakeKey(user, ""))
	delete(w.called, wakeKey(user, sandbox))
	w.failures.Remove(user)
	w.pending.Store(int32(len(w.called) + w.failures.Len()))
	w.mu.Unlock()
}

// post asks the auth API to wake user's sandbox. It is not cut short by
// the request that asked: the requests that wait after it share its call.
func (w *waker) post(user string) error {
	body, _ := json.Marshal(map[string]string{"user": user}) // a map of strings always encodes
	err := w.api.call(w.path, body, func(resp *http.Response) error {
		drainBody(resp)
		if resp.StatusCode/100 != 2 {
			return &wakeRefusedError{status: resp.StatusCode}
		}
		return nil
	})
	return w.api.down(callWake, err)
}

// awaitReady is wake-on-connect: a request for a Suspended or not-Ready
// sandbox asks the auth API to wake it and is held until the informer
// reports the Sandbox Ready, up to WakeTimeout. It returns e unchanged when
// the sandbox is routable or wake-on-connect is off.
func (w *waker) awaitReady(ctx *fasthttp.RequestCtx, x *exchange, e informer.Entry) (informer.Entry, error) {
	if w.waiter == nil {
		return e, nil
	}
	if e.Route.State != informer.StateSuspended && e.Route.State != informer.StatePending {
		if e.Route.State == informer.StateReady {
			w.woke(x.route.user, e.Route.Sandbox)
			w.pages.done(x.route.user)
		}
		return e, nil
	}
	start := time.Now()
	hold, expired := w.timeout, wakeTimeout
	if browserPage(ctx, x) {
		// The waking page answers it: not a wake that timed out.
		hold, expired = w.pageHold(), wakePage
	}
	wctx, cancel := holdContext(ctx.Done(), hold)
	defer cancel()
	wakeErr := w.wake(x.route.user, e.Route.Sandbox)
	if err := unwakeable(e, wakeErr); err != nil {
		w.m.wakes.WithLabelValues(wakeFailed).Inc()
		return e, err
	}
	if wakeErr != nil {
		// The informer may still see it wake (another node asked): wait anyway.
		w.log.Warn("wake call failed", "user", x.route.user, "error", wakeErr)
	}
	ready, err := w.waiter.WaitReady(wctx, x.route.user, "")
	w.m.wakeLatency.Observe(time.Since(start).Seconds())
	x.held = true
	switch {
	case err == nil && ready.Route.State != informer.StateReady:
		// A state no wait mends (InvalidConfiguration): resolve answers it.
		w.m.wakes.WithLabelValues(wakeFailed).Inc()
		return ready, nil
	case err == nil:
		w.woke(x.route.user, e.Route.Sandbox)
		w.pages.done(x.route.user)
		w.m.wakes.WithLabelValues(wakeReady).Inc()
		return ready, nil
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		w.m.wakes.WithLabelValues(expired).Inc()
		if errors.Is(wakeErr, ErrAuthAPIUnavailable) {
			return ready, wakeErr
		}
		return ready, fmt.Errorf("%w after %v", ErrWakeTimeout, hold)
	case ctx.Err() != nil:
		w.m.wakes.WithLabelValues(wakeFailed).Inc()
		return ready, fmt.Errorf("%w: while waking", ErrShuttingDown)
	}
	w.m.wakes.WithLabelValues(wakeFailed).Inc()
	return ready, err
}

// awaitMoved holds a request whose hop found its sandbox Ready on another
// node until this node's caches see it Ready away from the node it hopped
// to, up to WakeTimeout. The wake is under way already: no call is made.
func (w *waker) awaitMoved(ctx *fasthttp.RequestCtx, x *exchange, from string) (informer.Entry, error) {
	if w.waiter == nil {
		return informer.Entry{}, ErrMoved
	}
	wctx, cancel := holdContext(ctx.Done(), w.timeout)
	defer cancel()
	e, err := w.waiter.WaitReady(wctx, x.route.user, from)
	switch {
	case err == nil:
		return e, nil
	case ctx.Err() != nil:
		return e, fmt.Errorf("%w: while following a moved sandbox", ErrShuttingDown)
	case errors.Is(err, context.DeadlineExceeded):
		return e, fmt.Errorf("%w: %w after %v", ErrWakeTimeout, ErrMoved, w.timeout)
	}
	return e, err
}

// holdContext ends after hold, or at once when done (the server's
// shutdown) is closed. It is not derived from the RequestCtx: its timer
// would then reach into ctx after the handler returned, while fasthttp
// reuses it for the next request.
func holdContext(done <-chan struct{}, hold time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), hold)
	go func() {
		select {
		case <-done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// navigation reports whether a request is a browser loading a page, which
// gets the waking page instead of a bare 503.
func navigation(ctx *fasthttp.RequestCtx, x *exchange) bool {
	return !x.ws && ctx.IsGet() && bytes.Contains(ctx.Request.Header.Peek("Accept"), []byte("text/html"))
}

// maxPageHold is how long a browser navigation to a sandbox that is not
// Ready is held before it gets the waking page: a page within about a
// second, rather than a blank tab for WAKE_TIMEOUT.
const maxPageHold = time.Second

// pageHold is how long a navigation is held: maxPageHold, or a quarter of
// a shorter WAKE_TIMEOUT.
func (w *waker) pageHold() time.Duration { return min(maxPageHold, w.timeout/4) }
