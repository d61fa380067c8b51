package nodeproxy

import (
	"errors"
	"fmt"

	"github.com/valyala/fasthttp"
)

// hop forwards a request (or bridges a WebSocket) once to the proxy of
// the node that runs the user's pod, with the client headers a peer may
// need: everything but credentials, hop-by-hop and identity headers; the
// peer applies the header policy (and any allowlist) itself. That proxy
// re-verifies the user's credentials, does the handshake and talks to the
// pod itself, so the launch token and the app's cookie never leave the
// pod's node. The request carries the user's own
// credential (the renewed session token, if renewal happened here), the
// hop header that stops it from being forwarded again and, with a hop key,
// the proof that makes its forwarded headers trusted.
func (fw *forwarder) hop(ctx *fasthttp.RequestCtx, x *exchange, id identity, t target) error {
	fw.m.hops.WithLabelValues("out", "sent").Inc()
	return fw.forward(ctx, x, forwarding{
		upstream:  upstreamPeer,
		base:      "http://",
		host:      t.peer,
		target:    x.route.prefix() + x.route.target,
		headers:   fw.rules.toPeer,
		own:       &hopHeaders{fw: fw, ctx: ctx, x: x, id: id, node: t.node},
		failed:    peerDown,
		wsFailure: "WebSocket hop",
		movable:   true,
		// The peer already rewrote Location and dropped the app's
		// cookies; the app rules are applied again in case it is of an
		// older version.
		resp: fw.appPolicy(x, ""),
	})
}

// hopHeaders are a hop's own headers: the user's credential, the hop
// header and, with a hop key, the proof.
type hopHeaders struct {
	fw   *forwarder
	ctx  *fasthttp.RequestCtx
	x    *exchange
	id   identity
	node string
}

func (hh *hopHeaders) set(h outHeader, uri string) {
	fw := hh.fw
	setCredential(h.Set, hh.id, fw.sessions.of(hh.x.route).cookie)
	h.Set(hopHeader, fw.nodeName)
	if uri != "" && fw.hopAuth != nil {
		h.Set(hopAuthHeader, fw.hopAuth.sign(fw.sentHop(hh.ctx, hh.x, hh.node, uri)))
	}
}

// peerDown names a hop that could not connect: the peer is restarting (a
// rollout) or its node is gone, and the request never reached it, so the
// client may retry it.
func peerDown(err error) error {
	if errors.Is(err, errNoConnection) {
		return fmt.Errorf("%w: %w", ErrPeerDown, err)
	}
	return err
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

// sentHop is the claim of a hop this proxy sends to node with uri as its
// request target.
func (fw *forwarder) sentHop(ctx *fasthttp.RequestCtx, x *exchange, node, uri string) hopClaim {
	return hopClaim{
		method: x.method, uri: uri, host: string(ctx.Host()), user: x.route.user,
		from: fw.nodeName, to: node,
		xff: x.fwd.xff, proto: x.fwd.proto, fwdHost: x.fwd.host,
	}
}
