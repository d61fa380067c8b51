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
	// base and host are the upstream's http(s)://host[:port]: "http://"
	// and the pod's or peer's address, or the auth API's public base and
	// no host; target is the request URI asked of it. Kept apart, they
	// cost one concatenation per request.
	base, host, target string
	// headers is the rule of the client headers this upstream may see.
	headers headerrule.Pair
	// own sets this upstream's own headers after the forwarded ones.
	own ownHeaders
	// authAPIBody reads the request body as readAuthAPIBody does, else as
	// readBody does.
	authAPIBody bool
	// app is the retry rule of a pod's app: nil for the others.
	app *appRetry
	// failed maps a round trip that got no answer to the outcome.
	failed func(error) error
	// wsFailure names a failed WebSocket dial in the outcome.
	wsFailure string
	resp      respPolicy
}

// ownHeaders sets an upstream's own request headers; uri is the request
// URI the upstream will see. Its implementations live on the exchange or
// cost nothing, so choosing one allocates nothing.
type ownHeaders interface {
	set(h outHeader, uri string)
}

// noOwnHeaders is the auth API's: the client's headers go as they are.
type noOwnHeaders struct{}

func (noOwnHeaders) set(outHeader, string) {}

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
	read := p.readBody
	if f.authAPIBody {
		read = p.readAuthAPIBody
	}
	b, release, err := read(ctx, x)
	if err != nil {
		p.fail(ctx, x, err)
		return
	}
	defer release()
	defer b.release()
	if f.app != nil && !b.complete() {
		if err := f.app.confirm(ctx); err != nil {
			p.fail(ctx, x, err)
			return
		}
	}
	headers := func(h *fasthttp.RequestHeader) {
		f.headers.HTTP.CopyRequest(h, &ctx.Request.Header)
		x.fwd.setOn(h.Set)
		f.own.set(fastHeader{h}, f.target)
	}
	uri := f.base + f.host + f.target
	resp, err := p.roundTrip(ctx, uri, b, headers)
	if err == nil && f.app != nil && resp.StatusCode() == fasthttp.StatusUnauthorized && b.complete() {
		discard(resp)
		if err = f.app.refresh(ctx); err != nil {
			p.fail(ctx, x, err)
			return
		}
		resp, err = p.roundTrip(ctx, uri, b, headers)
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
	dialURL := "ws" + f.base[len("http"):] + f.host + f.target
	var sent string // the request URI the dialer sends
	if u, err := url.Parse(dialURL); err == nil {
		sent = u.RequestURI()
	}
	dial := func() (*websocket.Conn, *http.Response, error) {
		h := f.headers.Dial.DialHeader(&ctx.Request.Header)
		x.fwd.setOn(h.Set)
		f.own.set(dialHeader{h}, sent)
		return p.dialUpstreamWS(ctx, dialURL, h)
	}
	conn, resp, err := dial()
	if err != nil && f.app != nil && resp != nil && resp.StatusCode == http.StatusUnauthorized {
		if err = f.app.refresh(ctx); err != nil {
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
