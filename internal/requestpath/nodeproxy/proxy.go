package nodeproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// toPod is the proxy stage for a pod on this node: the request goes with
// the app's cookie, and is sent once more with a refreshed handshake if
// the app answers 401 and the body can be sent again (appRetry). A
// WebSocket dial gets the same headers.
func (p *Proxy) toPod(ctx *fasthttp.RequestCtx, x *exchange, up upstream) {
	x.app = appRetry{p: p, x: x, up: up}
	p.forward(ctx, x, forwarding{
		upstream:  upstreamPod,
		base:      "http://",
		host:      up.target.Addr,
		target:    x.route.target,
		headers:   p.rules.toApp,
		own:       &x.app,
		app:       &x.app,
		failed:    unmapped,
		wsFailure: "WebSocket dial",
		resp:      p.appPolicy(x, x.route.prefix()),
	})
}

// appRetry is the retry rule of a pod's app. A body that cannot be sent
// again goes out only with a cookie the app accepted lately, or after a
// refresh (docs/handshake.md); a 401 to one that can is answered by a
// refresh and one more try. It lives on the exchange.
type appRetry struct {
	p  *Proxy
	x  *exchange
	up upstream
}

// set sends the app's cookie, and on a user origin the main host and
// Origin the app knows.
func (a *appRetry) set(h outHeader, _ string) {
	h.Set("Cookie", a.up.cookie)
	if a.x.route.origin != "" {
		h.SetHost(a.up.target.Host)
		if o := a.p.appOrigin(a.x, []byte(h.Get("Origin"))); o != "" {
			h.Set("Origin", o)
		}
	}
}

// confirm readies the cookie for a body that cannot be sent again.
func (a *appRetry) confirm(ctx *fasthttp.RequestCtx) error {
	up, err := a.p.confirm(ctx, a.up)
	a.up = up
	return err
}

// refresh replaces the cookie the app refused, before the one retry.
func (a *appRetry) refresh(ctx *fasthttp.RequestCtx) error {
	up, err := a.p.refresh(ctx, a.up)
	if err != nil {
		return err
	}
	a.up = up
	a.x.retried = true
	a.p.m.retries.Inc()
	return nil
}

// roundTrip sends one request upstream and returns the response with its
// body still streaming. The browser's Host is kept unless headers sets
// another. A body that cannot be sent again goes on a new connection.
func (p *Proxy) roundTrip(ctx *fasthttp.RequestCtx, uri string, b *body, headers func(*fasthttp.RequestHeader)) (*fasthttp.Response, error) {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI(uri)
	req.Header.SetMethodBytes(ctx.Method())
	req.UseHostHeader = true
	req.Header.SetHostBytes(ctx.Host())
	headers(&req.Header)
	b.attach(req)
	client := p.client
	if !b.complete() {
		client = p.uploads.client
		req.SetConnectionClose()
	}
	resp := fasthttp.AcquireResponse()
	start := time.Now()
	err := client.Do(req, resp)
	p.m.observe(stageUpstream, start)
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		if f := b.failure(); f != nil {
			return nil, f
		}
		return nil, upstreamError(err)
	}
	return resp, nil
}

// retryStale allows one retry of a request whose connection closed before
// any response byte arrived, as a kept-alive connection does after the app
// restarted or closed it while idle. fasthttp never retries a streamed
// body; a buffered one can be sent again. Timeouts are not retried.
func retryStale(_ *fasthttp.Request, attempts int, err error) (bool, bool) {
	if attempts > 1 {
		return false, false
	}
	return false, errors.Is(err, io.EOF) || errors.Is(err, fasthttp.ErrConnectionClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// discard drops a response without passing it on.
func discard(resp *fasthttp.Response) {
	if s, ok := resp.BodyStream().(fasthttp.ReadCloserWithError); ok {
		s.CloseWithError(nil)
	}
	fasthttp.ReleaseResponse(resp)
}

// upstreamError classifies a failed round trip without quoting it: a
// parse error can carry bytes of the response.
func upstreamError(err error) error {
	var op *net.OpError
	dial := errors.As(err, &op) && op.Op == "dial"
	switch {
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, os.ErrDeadlineExceeded):
		if dial {
			return fmt.Errorf("%w: %w in time", ErrUpstreamTimeout, errNoConnection)
		}
		return fmt.Errorf("%w: no response in time", ErrUpstreamTimeout)
	case op != nil:
		reason := op.Op + " failed"
		var errno syscall.Errno
		if errors.As(op.Err, &errno) {
			reason = op.Op + ": " + errno.Error()
		}
		if dial {
			return fmt.Errorf("%w: %w: %s", ErrUpstream, errNoConnection, reason)
		}
		return fmt.Errorf("%w: %s", ErrUpstream, reason)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, fasthttp.ErrConnectionClosed):
		return fmt.Errorf("%w: connection closed early", ErrUpstream)
	}
	return fmt.Errorf("%w: malformed response", ErrUpstream)
}
