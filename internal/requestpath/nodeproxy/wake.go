package nodeproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

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

// waker asks the auth API to wake sandboxes: one call per sandbox while a
// wake is under way (WakeTimeout), however many requests wait for it.
type waker struct {
	api     *authClient
	path    string
	timeout time.Duration
	now     func() time.Time
	group   singleflight.Group

	mu     sync.Mutex
	called map[string]time.Time // wake key -> when its call succeeded
	// pending is len(called), so that requests to Ready sandboxes skip
	// the lock while no wake is remembered.
	pending atomic.Int32
	// pages times the waits the waking page reports.
	pages wakeClock
}

func newWaker(o Options, api *authClient) *waker {
	return &waker{api: api, path: o.WakePath, timeout: o.WakeTimeout, now: o.Now, called: map[string]time.Time{}}
}

func wakeKey(user, sandbox string) string {
	if sandbox != "" {
		return "s/" + sandbox
	}
	return "u/" + user
}

// wake asks the auth API once to wake user's sandbox, unless a call for
// the same sandbox succeeded within the wake timeout and has not finished.
func (w *waker) wake(user, sandbox string) error {
	key := wakeKey(user, sandbox)
	now := w.now()
	w.mu.Lock()
	if t, ok := w.called[key]; ok && now.Sub(t) < w.timeout {
		w.mu.Unlock()
		return nil
	}
	w.mu.Unlock()
	_, err, _ := w.group.Do(key, func() (any, error) {
		w.mu.Lock()
		if t, ok := w.called[key]; ok && w.now().Sub(t) < w.timeout {
			w.mu.Unlock()
			return nil, nil
		}
		w.mu.Unlock()
		if err := w.post(user); err != nil {
			return nil, err
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		for k, t := range w.called {
			if w.now().Sub(t) >= w.timeout {
				delete(w.called, k)
			}
		}
		w.called[key] = w.now()
		w.pending.Store(int32(len(w.called)))
		return nil, nil
	})
	return err
}

// woke ends the wakes of a user's sandbox the informer now sees Ready
// (called before and after adoption), so that its next suspension is met
// by a new call.
func (w *waker) woke(user, sandbox string) {
	if w.pending.Load() == 0 {
		return
	}
	w.mu.Lock()
	delete(w.called, wakeKey(user, ""))
	delete(w.called, wakeKey(user, sandbox))
	w.pending.Store(int32(len(w.called)))
	w.mu.Unlock()
}

// post asks the auth API to wake user's sandbox. It is not cut short by
// the request that asked: the requests that wait after it share its call.
func (w *waker) post(user string) error {
	body, _ := json.Marshal(map[string]string{"user": user}) // a map of strings always encodes
	err := w.api.call(w.path, body, func(resp *http.Response) error {
		drainBody(resp)
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%w: wake answered %d", ErrUpstream, resp.StatusCode)
		}
		return nil
	})
	return w.api.down(callWake, err)
}

// awaitReady is wake-on-connect: a request for a Suspended or not-Ready
// sandbox asks the auth API to wake it and is held until the informer
// reports the Sandbox Ready, up to WakeTimeout. It returns e unchanged when
// the sandbox is routable or wake-on-connect is off.
func (p *Proxy) awaitReady(ctx *fasthttp.RequestCtx, x *exchange, e informer.Entry) (informer.Entry, error) {
	if p.opts.Waiter == nil {
		return e, nil
	}
	if e.Route.State != informer.StateSuspended && e.Route.State != informer.StatePending {
		if e.Route.State == informer.StateReady {
			p.waker.woke(x.route.user, e.Route.Sandbox)
			p.waker.pages.done(x.route.user)
		}
		return e, nil
	}
	start := time.Now()
	hold, expired := p.opts.WakeTimeout, wakeTimeout
	if browserPage(ctx, x) {
		// The waking page answers it: not a wake that timed out.
		hold, expired = p.pageHold(), wakePage
	}
	wctx, cancel := holdContext(ctx.Done(), hold)
	defer cancel()
	wakeErr := p.waker.wake(x.route.user, e.Route.Sandbox)
	if err := unwakeable(e, wakeErr); err != nil {
		p.m.wakes.WithLabelValues(wakeFailed).Inc()
		return e, err
	}
	if wakeErr != nil {
		// The informer may still see it wake (another node asked): wait anyway.
		p.log.Warn("wake call failed", "user", x.route.user, "error", wakeErr)
	}
	ready, err := p.opts.Waiter.WaitReady(wctx, x.route.user)
	p.m.wakeLatency.Observe(time.Since(start).Seconds())
	x.held = true
	switch {
	case err == nil && ready.Route.State != informer.StateReady:
		// A state no wait mends (InvalidConfiguration): resolve answers it.
		p.m.wakes.WithLabelValues(wakeFailed).Inc()
		return ready, nil
	case err == nil:
		p.waker.woke(x.route.user, e.Route.Sandbox)
		p.waker.pages.done(x.route.user)
		p.m.wakes.WithLabelValues(wakeReady).Inc()
		return ready, nil
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		p.m.wakes.WithLabelValues(expired).Inc()
		if errors.Is(wakeErr, ErrAuthAPIUnavailable) {
			return ready, wakeErr
		}
		return ready, fmt.Errorf("%w after %v", ErrWakeTimeout, hold)
	case ctx.Err() != nil:
		p.m.wakes.WithLabelValues(wakeFailed).Inc()
		return ready, fmt.Errorf("%w: while waking", ErrShuttingDown)
	}
	p.m.wakes.WithLabelValues(wakeFailed).Inc()
	return ready, err
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
