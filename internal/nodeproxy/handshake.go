package nodeproxy

import (
	"time"

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
		Host:           p.appHost(ctx, x),
		ForwardedFor:   x.fwd.xff,
		ForwardedProto: x.fwd.proto,
		ForwardedHost:  x.fwd.host,
	}
	x.upstream = upstreamPod
	cookie, err := p.opts.Handshaker.Cookie(ctx, ht)
	return upstream{target: ht, cookie: cookie}, err
}

// refresh redoes the handshake after the app answered 401 to up's cookie.
func (p *Proxy) refresh(ctx *fasthttp.RequestCtx, up upstream) (upstream, error) {
	start := time.Now()
	defer p.m.observe(stageHandshake, start)
	cookie, err := p.opts.Handshaker.Refresh(ctx, up.target, up.cookie)
	up.cookie = cookie
	return up, err
}
