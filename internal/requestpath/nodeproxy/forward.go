package nodeproxy

import (
	"fmt"
	"net/http"
	"net/url"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/requestpath/headerrule"
)

// forwarding is where and how one request is forwarded: to a pod on this
// node (toPod), to the proxy of the pod's node (hop) or to the auth API
// (toAuthAPI). One exchange runs them all, forward for HTTP and bridge for
// a WebSocket; what differs is this data.
type forwarding struct {
	upstream string // pod, peer or authapi, for the access log
	// origin is the upstream's http(s)://host[:port], and target the
	// request URI asked of it.
	origin, target string
	// headers is the rule of the client headers this upstream may see.
	headers headerrule.Pair
	// setHeaders sets this upstream's own headers after the forwarded
	// ones; uri is the request URI the upstream will see.
	setHeaders func(h outHeader, uri string)
	// readBody reads the request body for this upstream; release gives
	// back what it reserved.
	readBody func(ctx *fasthttp.RequestCtx, x *exchange) (b *body, release func(), err error)
	// app is the retry rule of a pod's app: nil for the others.
	app *appRetry
	// failed maps a round trip that got no answer to the outcome.
	failed func(error) error
	// wsFailure names a failed WebSocket dial in the outcome.
	wsFailure string
	resp      respPolicy
}

// outHeader is the request header a forward writes: fasthttp's for HTTP,
// net/http's for a WebSocket dial.
type outHeader interface {
	Set(k, v string)
	Get(k string) string
	SetHost(host string)
}

// fastHeader is an HTTP request's header as an outHeader.
type fastHeader struct{ *fasthttp.RequestHeader }

func (h fastHeader) Get(k string) string { return string(h.Peek(k)) }

// dialHeader is a WebSocket dial's header as an outHeader.
type dialHeader struct{ http.Header }

func (h dialHeader) SetHost(host string) { h.Header.Set("Host", host) }

// forward sends the request on as f says and streams the answer back; a
// WebSocket upgrade is bridged instead.
func (p *Proxy) forward(ctx *fasthttp.RequestCtx, x *exchange, f forwarding) {
	x.upstream = f.upstream
	if x.ws {
		p.bridge(ctx, x, f)
		return
	}
	b, release, err := f.readBody(ctx, x)
	if err != nil {
		p.fail(ctx, x, err)
		return
	}
	defer release()
	defer b.release()
	if f.app != nil && !b.complete() {
		if err := f.app.confirm(p, ctx); err != nil {
			p.fail(ctx, x, err)
			return
		}
	}
	headers := func(h *fasthttp.RequestHeader) {
		f.headers.HTTP.CopyRequest(h, &ctx.Request.Header)
		x.fwd.setOn(h.Set)
		f.setHeaders(fastHeader{h}, f.target)
	}
	resp, err := p.roundTrip(ctx, f.origin+f.target, b, headers)
	if err == nil && f.app != nil && resp.StatusCode() == fasthttp.StatusUnauthorized && b.complete() {
		discard(resp)
		if err = f.app.refresh(p, ctx, x); err != nil {
			p.fail(ctx, x, err)
			return
		}
		resp, err = p.roundTrip(ctx, f.origin+f.target, b, headers)
	}
	if err != nil {
		p.fail(ctx, x, f.failed(err))
		return
	}
	if f.app != nil && resp.StatusCode() != fasthttp.StatusUnauthorized {
		p.uploads.accepted.accepted(f.app.up.cookie)
	}
	p.respond(ctx, x, resp, f.resp)
}

// bridge dials the upstream's WebSocket as f says (once more after the
// app's 401, with a refreshed cookie), then upgrades the client and
// bridges the two. A failed dial is reported to the client as close 1011
// after the upgrade.
func (p *Proxy) bridge(ctx *fasthttp.RequestCtx, x *exchange, f forwarding) {
	dialURL := "ws" + f.origin[len("http"):] + f.target
	var sent string // the request URI the dialer sends
	if u, err := url.Parse(dialURL); err == nil {
		sent = u.RequestURI()
	}
	dial := func() (*websocket.Conn, *http.Response, error) {
		h := f.headers.Dial.DialHeader(&ctx.Request.Header)
		x.fwd.setOn(h.Set)
		f.setHeaders(dialHeader{h}, sent)
		return p.dialUpstreamWS(ctx, dialURL, h)
	}
	conn, resp, err := dial()
	if err != nil && f.app != nil && resp != nil && resp.StatusCode == http.StatusUnauthorized {
		if err = f.app.refresh(p, ctx, x); err != nil {
			p.fail(ctx, x, err)
			return
		}
		conn, _, err = dial()
	}
	if err != nil {
		p.fail(ctx, x, fmt.Errorf("%w: %s: %s", ErrUpstream, f.wsFailure, wsDialFailure(err)))
		return
	}
	p.upgradeAndBridge(ctx, x, conn)
}

// noRelease is the release of a body that reserved nothing.
func noRelease() {}

// unmapped leaves a failed round trip's outcome as it is.
func unmapped(err error) error { return err }
