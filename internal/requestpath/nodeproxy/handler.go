package nodeproxy

import (
	"errors"
	"fmt"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/activity"
)

// serve is the top-level handler. It runs the stages in order:
// route -> auth -> in-flight slot -> resolve -> handshake -> proxy (HTTP,
// WebSocket, or a hop to the pod's node).
func (p *Proxy) serve(ctx *fasthttp.RequestCtx) {
	x := p.begin(ctx)
	if err := checkServiceWorker(ctx, x); err != nil {
		p.fail(ctx, x, err)
		return
	}
	switch x.route.kind {
	case routeAuthAPI:
		p.toAuthAPI(ctx, x)
		return
	case routeRedirect:
		p.redirect(ctx, x)
		return
	case routeBadPath:
		p.fail(ctx, x, fmt.Errorf("%w: path", ErrBadRequest))
		return
	case routeNoUser:
		p.fail(ctx, x, fmt.Errorf("%w: no such user path", ErrNotFound))
		return
	case routeEnter:
		p.enter(ctx, x)
		return
	}
	if !validHost(ctx.Host()) {
		p.fail(ctx, x, fmt.Errorf("%w: host", ErrBadRequest))
		return
	}
	if err := p.checkOrigin(ctx, x); err != nil {
		p.fail(ctx, x, err)
		return
	}

	keySets := p.opts.KeySetsReplaced()
	id, entry, err := p.auth(ctx, x)
	if err != nil {
		if x.route.origin != "" && navigation(ctx, x) && errors.Is(err, ErrUnauthenticated) {
			p.toMainOrigin(ctx, x, err)
			return
		}
		p.fail(ctx, x, err)
		return
	}
	holdSession(x, id, keySets)
	if err := p.acquire(x); err != nil {
		p.fail(ctx, x, err)
		return
	}
	p.track(x, entry.Route.Sandbox)
	if entry, err = p.awaitReady(ctx, x, entry); err != nil {
		if errors.Is(err, ErrWakeTimeout) && navigation(ctx, x) {
			p.wakingPage(ctx, x, err)
			return
		}
		p.fail(ctx, x, err)
		return
	}
	p.track(x, entry.Route.Sandbox)
	t, err := p.resolve(x, entry)
	if err != nil {
		p.fail(ctx, x, err)
		return
	}
	if t.peer != "" {
		p.hop(ctx, x, id, t)
		return
	}
	up, err := p.handshake(ctx, x, t)
	if err != nil {
		p.fail(ctx, x, err)
		return
	}
	p.toPod(ctx, x, up)
}

// begin copies what the stages and the access log need out of the request.
// Another node's proxy hops only to /u/: elsewhere the hop header earns
// its sender no trust in the forwarded headers. With a hop key, only a hop
// whose proof verifies does; any other is a client's request, though it
// still never hops again or renews a session (hopIn).
func (p *Proxy) begin(ctx *fasthttp.RequestCtx) *exchange {
	hop := len(ctx.Request.Header.Peek(hopHeader)) > 0
	peer := peerAddr(ctx)
	r := p.routeOf(ctx)
	trust := hopTrust{p: p, peer: peer, hop: hop && r.kind == routeUser}
	if trust.hop {
		trust.vouched = p.checkHop(ctx, r, peer)
	}
	host := string(ctx.Host())
	x := &exchange{
		outcome: outcome{start: time.Now()},
		route:   r,
		method:  methodName(ctx.Method()),
		host:    host,
		peer:    peer,
		client:  p.clientOf(&ctx.Request.Header, peer, trust.trusted),
		hopIn:   hop,
		fwd:     forwardedOf(&ctx.Request.Header, host, peer, ctx.IsTLS(), trust.trusted(peer)),
	}
	if x.route.kind == routeUser {
		x.ws = websocket.FastHTTPIsWebSocketUpgrade(ctx)
	}
	if x.route.kind == routeAuthAPI && isInternal(x.route.path) {
		x.route.kind = routeNoUser
	}
	x.asserted = p.checkIdentity(&ctx.Request.Header, peer)
	return x
}

// track counts the request against its sandbox in the activity table
// until finish, from the first call that knows the sandbox: serve calls it
// before awaitReady, so a request held while its sandbox wakes counts, and
// again after, so one that came before adoption (no sandbox yet) counts
// from there on. Later calls leave it counted once, against the first.
func (p *Proxy) track(x *exchange, sandbox string) {
	if p.opts.Activity == nil || sandbox == "" || x.tracked {
		return
	}
	x.act = activity.Key{Namespace: p.opts.Namespace, Name: sandbox}
	x.tracked = true
	p.opts.Activity.Begin(x.act)
}

// traffic records body bytes or a WebSocket data frame of a tracked
// request.
func (p *Proxy) traffic(x *exchange) {
	if x.tracked {
		p.opts.Activity.Traffic(x.act)
	}
}

// acquire takes one of the user's in-flight slots.
func (p *Proxy) acquire(x *exchange) error {
	if !p.inflight.acquire(x.route.user) {
		return ErrTooManyInFlight
	}
	x.slot = true
	p.m.inFlight.Inc()
	return nil
}

// redirect sends /u/<user> to /u/<user>/, keeping the method for
// non-GET requests.
func (p *Proxy) redirect(ctx *fasthttp.RequestCtx, x *exchange) {
	status := fasthttp.StatusMovedPermanently
	if !ctx.IsGet() && !ctx.IsHead() {
		status = fasthttp.StatusPermanentRedirect
	}
	ctx.Response.Header.Set("Location", x.route.target)
	ctx.Response.Header.Set("Cache-Control", "no-store")
	p.reply(ctx, x, status, nil)
}

// methodName is m as a string, without a copy for the common methods.
func methodName(m []byte) string {
	for _, known := range []string{fasthttp.MethodGet, fasthttp.MethodPost, fasthttp.MethodHead, fasthttp.MethodPut,
		fasthttp.MethodPatch, fasthttp.MethodDelete, fasthttp.MethodOptions} {
		if string(m) == known {
			return known
		}
	}
	return string(m)
}
