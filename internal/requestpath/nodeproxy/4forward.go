package nodeproxy

import (
	"fmt"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/requestpath/headerrule"
)

// forwarder is the forward stage: the one exchange with every upstream
// (a pod on this node, the proxy of the pod's node, the auth API), with
// its bodies, streams and WebSockets, the target's resolution and the
// app's launch-token handshake. Its methods return an error for the
// handler to answer while nothing is written yet; once the upstream's
// response or a WebSocket is under way, the request ends in end.finish.
type forwarder struct {
	maxBodyBytes      int64
	bufferBodyBytes   int
	headerTimeout     time.Duration
	dialTimeout       time.Duration
	wsMaxMessageBytes int64
	peerPort          int
	publicOrigin      string
	mainHost          string // PublicOrigin's host[:port], the apps' Host on user origins
	nodeName          string // this node, the hop header's value
	hopAuth           *hopAuth
	handshaker        Handshaker
	sessions          sessionRuleSet // the cookie a hop carries the session in

	m            *metrics
	rules        headerRules
	client       *fasthttp.Client // pods, peers and the auth API
	uploads      *uploads
	dialer       *websocket.Dialer
	authAPI      *authClient
	bodies       *bodyBudget
	activity     tracker
	watch        *watcher // the session watch of an open stream or WebSocket
	sockets      *wsRegistry
	streams      *streamRegistry
	draining     *atomic.Bool
	writeTimeout time.Duration
	end          *answers
}

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
	// movable: a peer's movedHeader answer to a request without a body
	// is returned as ErrMoved, not passed on.
	movable bool
	resp    respPolicy
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
func (fw *forwarder) forward(ctx *fasthttp.RequestCtx, x *exchange, f forwarding) error {
	x.upstream = f.upstream
	if x.ws {
		return fw.bridge(ctx, x, f)
	}
	read := fw.readBody
	if f.authAPIBody {
		read = fw.readAuthAPIBody
	}
	b, release, err := read(ctx, x)
	if err != nil {
		return err
	}
	defer release()
	defer b.release()
	if f.app != nil && !b.complete() {
		if err := fw.confirm(f.app); err != nil {
			return err
		}
	}
	headers := func(h *fasthttp.RequestHeader) {
		f.headers.HTTP.CopyRequest(h, &ctx.Request.Header)
		x.fwd.setOn(h.Set)
		f.own.set(fastHeader{h}, f.target)
	}
	uri := f.base + f.host + f.target
	resp, err := fw.roundTrip(ctx, uri, b, headers)
	if err == nil && f.app != nil && resp.StatusCode() == fasthttp.StatusUnauthorized && b.complete() {
		discard(resp)
		if err = fw.refresh(x, f.app); err != nil {
			return err
		}
		resp, err = fw.roundTrip(ctx, uri, b, headers)
	}
	if err != nil {
		return f.failed(err)
	}
	if f.app != nil && resp.StatusCode() != fasthttp.StatusUnauthorized {
		fw.uploads.accepted.accepted(f.app.up.cookie)
	}
	if f.movable && moved(ctx, resp) {
		discard(resp)
		return ErrMoved
	}
	return fw.respond(ctx, x, resp, f.resp)
}

// bridge dials the upstream's WebSocket as f says (once more after the
// app's 401, with a refreshed cookie), then upgrades the client and
// bridges the two. A failed dial is reported to the client as close 1011
// after the upgrade.
func (fw *forwarder) bridge(ctx *fasthttp.RequestCtx, x *exchange, f forwarding) error {
	dialURL := "ws" + f.base[len("http"):] + f.host + f.target
	var sent string // the request URI the dialer sends
	if u, err := url.Parse(dialURL); err == nil {
		sent = u.RequestURI()
	}
	dial := func() (*websocket.Conn, *http.Response, error) {
		h := f.headers.Dial.DialHeader(&ctx.Request.Header)
		x.fwd.setOn(h.Set)
		f.own.set(dialHeader{h}, sent)
		return fw.dialUpstreamWS(ctx, dialURL, h)
	}
	conn, resp, err := dial()
	if err != nil && f.app != nil && resp != nil && resp.StatusCode == http.StatusUnauthorized {
		if err = fw.refresh(x, f.app); err != nil {
			return err
		}
		conn, _, err = dial()
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %s", ErrUpstream, f.wsFailure, wsDialFailure(err))
	}
	fw.upgradeAndBridge(ctx, x, conn)
	return nil
}

// moved reports a peer's answer that the sandbox went to another node, to
// a request that can be sent again: one without a body.
func moved(ctx *fasthttp.RequestCtx, resp *fasthttp.Response) bool {
	return resp.StatusCode() == fasthttp.StatusServiceUnavailable && len(resp.Header.Peek(movedHeader)) > 0 &&
		!hasBody(&ctx.Request.Header)
}

// toSandbox is the forward stage: resolve, then a hop to the pod's node,
// or the handshake and the pod on this node.
func (fw *forwarder) toSandbox(ctx *fasthttp.RequestCtx, x *exchange, id identity, e informer.Entry) error {
	t, err := fw.resolve(x, e)
	if err != nil {
		return err
	}
	if t.peer != "" {
		return fw.hop(ctx, x, id, t)
	}
	up, err := fw.handshake(ctx, x, t)
	if err != nil {
		return err
	}
	return fw.toPod(ctx, x, up)
}

// noRelease is the release of a body that reserved nothing.
func noRelease() {}

// unmapped leaves a failed round trip's outcome as it is.
func unmapped(err error) error { return err }
