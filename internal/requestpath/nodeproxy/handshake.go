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
func (p *Proxy) handshake(ctx *fasthttp.RequestCtx, x *exchange, t target) (upstream, error) {
	start := time.Now()
	defer p.m.observe(stageHandshake, start)
	ht := handshake.Target{
		User:           x.route.user,
		Namespace:      t.pod.Namespace,
		Pod:            t.pod.Name,
		PodUID:         t.pod.UID,
		Container:      t.pod.Container,
		Addr:           t.pod.Addr,
		Host:           p.appHost(x),
		ForwardedFor:   x.fwd.xff,
		ForwardedProto: x.fwd.proto,
		ForwardedHost:  x.fwd.host,
	}
	x.upstream = upstreamPod
	cookie, err := p.opts.Handshaker.Cookie(handshakeContext, ht)
	return upstream{target: ht, cookie: cookie}, err
}

// refresh redoes the handshake after the app answered 401 to up's cookie.
func (p *Proxy) refresh(ctx *fasthttp.RequestCtx, up upstream) (upstream, error) {
	start := time.Now()
	defer p.m.observe(stageHandshake, start)
	cookie, err := p.opts.Handshaker.Refresh(handshakeContext, up.target, up.cookie)
	up.cookie = cookie
	return up, err
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

// confirm makes sure up's cookie is one the app takes before a body that
// cannot be sent again goes out: one it accepted lately is kept, any other
// (unknown, or seen last long ago, when the app may have restarted since)
// is refreshed first. A refresh the user's handshake budget does not allow
// keeps the cookie, which is likely still good.
func (p *Proxy) confirm(ctx *fasthttp.RequestCtx, up upstream) (upstream, error) {
	if p.uploads.accepted.recent(up.cookie) {
		return up, nil
	}
	fresh, err := p.refresh(ctx, up)
	if errors.Is(err, handshake.ErrThrottled) {
		return up, nil
	}
	return fresh, err
}
