package nodeproxy

import (
	"net/http"

	"github.com/valyala/fasthttp"
)

// hop forwards a request once to the proxy of the node that runs the
// user's pod. That proxy re-verifies the user's credentials, does the
// handshake and talks to the pod itself, so the launch token and the app's
// cookie never leave the pod's node. The request carries the user's own
// credential (the renewed session token, if renewal happened here), the
// hop header that stops it from being forwarded again and, with a hop key,
// the proof that makes its forwarded headers trusted.
func (p *Proxy) hop(ctx *fasthttp.RequestCtx, x *exchange, id identity, t target) {
	x.upstream = upstreamPeer
	p.m.hops.WithLabelValues("out", "sent").Inc()
	if x.ws {
		p.bridgeHop(ctx, x, id, t)
		return
	}
	b, err := p.readBody(ctx, x)
	if err != nil {
		p.fail(ctx, x, err)
		return
	}
	defer b.release()
	reqURI := x.route.prefix() + x.route.target
	resp, err := p.roundTrip(ctx, "http://"+t.peer+reqURI, b, func(h *fasthttp.RequestHeader) {
		p.copyForHop(h, &ctx.Request.Header)
		x.fwd.set(h)
		setCredential(h.Set, id, p.sessionRules(x.route).cookie)
		h.Set(hopHeader, p.hopValue)
		if p.hopAuth != nil {
			h.Set(hopAuthHeader, p.hopAuth.sign(p.sentHop(ctx, x, t.node, reqURI)))
		}
	})
	if err != nil {
		p.fail(ctx, x, err)
		return
	}
	// The peer already rewrote Location and dropped the app's cookies;
	// the app rules are applied again in case it is of an older version.
	p.respond(ctx, x, resp, appPolicy(x, ""))
}

// copyForHop copies the client headers a peer proxy may need: everything
// but credentials, hop-by-hop and identity headers. The peer applies the
// header policy (and any allowlist) itself.
func (p *Proxy) copyForHop(dst, src *fasthttp.RequestHeader) {
	headerPolicy{}.copyToApp(dst, src)
}

// httpHeaderForHop is copyForHop for a WebSocket dial.
func (p *Proxy) httpHeaderForHop(src *fasthttp.RequestHeader) http.Header {
	return headerPolicy{}.httpHeaderForApp(src)
}

// setCredential re-presents the user's credential to the peer.
func setCredential(set func(k, v string), id identity, cookieName string) {
	switch id.method {
	case methodBearer:
		set("Authorization", "Bearer "+id.bearer)
	case methodCookie:
		set("Cookie", cookieName+"="+id.token)
	}
}
