package nodeproxy

import (
	"context"
	"errors"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/handshake"
)

// upstream is a pod on this node with the cookie its app expects.
type upstream struct {
	target handshake.Target
	cookie string
}

// handshake is the handshake stage: the app's auth cookie for this user,
// pod and Host, from the Handshaker's cache or a fresh token exchange. The
// launch token and the cookie never leave this node.
func (fw *forwarder) handshake(ctx *fasthttp.RequestCtx, x *exchange, t target) (upstream, error) {
	start := time.Now()
	defer fw.m.observe(stageHandshake, start)
	ht := handshake.Target{
		User:           x.route.user,
		Namespace:      t.pod.Namespace,
		Pod:            t.pod.Name,
		PodUID:         t.pod.UID,
		Container:      t.pod.Container,
		Addr:           t.pod.Addr,
		Host:           fw.appHost(x),
		ForwardedFor:   x.fwd.xff,
		ForwardedProto: x.fwd.proto,
		ForwardedHost:  x.fwd.host,
	}
	x.upstream = upstreamPod
	cookie, err := fw.handshaker.Cookie(handshakeContext, ht)
	return upstream{target: ht, cookie: cookie}, err
}

// refresh replaces the cookie the app refused with a's, before the one
// retry.
func (fw *forwarder) refresh(x *exchange, a *appRetry) error {
	cookie, err := fw.renewCookie(a)
	if err != nil {
		return err
	}
	a.up.cookie = cookie
	x.retried = true
	fw.m.retries.Inc()
	return nil
}

// renewCookie redoes the handshake for a cookie in place of a's.
func (fw *forwarder) renewCookie(a *appRetry) (string, error) {
	start := time.Now()
	defer fw.m.observe(stageHandshake, start)
	return fw.handshaker.Refresh(handshakeContext, a.up.target, a.up.cookie)
}

// handshakeContext is what a request waits for its handshake with:
// nothing the RequestCtx carries, not even its cancellation, which comes
// only when shutdown begins. A graceful drain lets the request finish: the
// wait is bounded by the handshake's own timeout
// (handshake.Options.Timeout), and the Handshaker is closed only after the
// servers return. One context serves every request.
var handshakeContext = context.Background()

// acceptedWithin is how recently the app must have accepted a cookie for a
// body that cannot be sent twice (one past BufferBodyBytes) to go out with
// it. A cookie near its expiry never gets here: the Handshaker drops it
// first.
const acceptedWithin = 30 * time.Second

// acceptedCookies is the last time the app answered a request that
// carried a cookie with anything but 401. The cookies are the Handshaker's
// own, which it already holds in memory.
type acceptedCookies struct {
	now  func() time.Time
	seen *lru.Cache[string, time.Time]
}

func newAcceptedCookies(now func() time.Time) *acceptedCookies {
	return &acceptedCookies{now: now, seen: must(lru.New[string, time.Time](4096))}
}

func (a *acceptedCookies) accepted(cookie string) { a.seen.Add(cookie, a.now()) }

// recent reports whether the app accepted cookie within acceptedWithin.
func (a *acceptedCookies) recent(cookie string) bool {
	t, ok := a.seen.Get(cookie)
	return ok && a.now().Sub(t) < acceptedWithin
}

// confirm makes sure a's cookie is one the app takes before a body that
// cannot be sent again goes out: one it accepted lately is kept, any other
// (unknown, or seen last long ago, when the app may have restarted since)
// is refreshed first. A refresh the user's handshake budget does not allow
// keeps the cookie, which is likely still good.
func (fw *forwarder) confirm(a *appRetry) error {
	if fw.uploads.accepted.recent(a.up.cookie) {
		return nil
	}
	cookie, err := fw.renewCookie(a)
	switch {
	case errors.Is(err, handshake.ErrThrottled):
		return nil
	case err != nil:
		return err
	}
	a.up.cookie = cookie
	return nil
}

// appHost is the Host the app is sent: the browser's, except on a user
// origin, where it is the main origin's host. Apps allow-list the Host
// names they serve (DSH_TRUSTED_HOSTS), and one per user could never be
// listed in a shared template; X-Forwarded-Host still names the user
// origin.
func (fw *forwarder) appHost(x *exchange) string {
	if x.route.origin != "" {
		return fw.mainHost
	}
	return x.host
}
