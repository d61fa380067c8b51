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

// proxyPod is the proxy stage for a pod on this node: read the body, send
// the request with the app's cookie, retry once with a refreshed handshake
// if the app answers 401 and the body can be sent again, then stream the
// response back. A body that cannot be sent again goes out only with a
// cookie the app accepted lately, or after a refresh (docs/handshake.md).
func (p *Proxy) proxyPod(ctx *fasthttp.RequestCtx, x *exchange, up upstream) {
	b, err := p.readBody(ctx, x)
	if err != nil {
		p.fail(ctx, x, err)
		return
	}
	defer b.release()
	if !b.complete() {
		if up, err = p.confirm(ctx, up); err != nil {
			p.fail(ctx, x, err)
			return
		}
	}
	uri := "http://" + up.target.Addr + x.route.target
	headers := func(h *fasthttp.RequestHeader, up upstream) {
		p.policy.copyToApp(h, &ctx.Request.Header)
		x.fwd.set(h)
		h.Set("Cookie", up.cookie)
		if x.route.origin != "" {
			h.SetHost(up.target.Host)
			if o := p.appOrigin(x, h.Peek("Origin")); o != "" {
				h.Set("Origin", o)
			}
		}
	}
	resp, err := p.roundTrip(ctx, uri, b, func(h *fasthttp.RequestHeader) { headers(h, up) })
	if err == nil && resp.StatusCode() == fasthttp.StatusUnauthorized && b.complete() {
		discard(resp)
		if up, err = p.refresh(ctx, up); err != nil {
			p.fail(ctx, x, err)
			return
		}
		x.retried = true
		p.m.retries.Inc()
		resp, err = p.roundTrip(ctx, uri, b, func(h *fasthttp.RequestHeader) { headers(h, up) })
	}
	if err != nil {
		p.fail(ctx, x, err)
		return
	}
	if resp.StatusCode() != fasthttp.StatusUnauthorized {
		p.uploads.accepted.accepted(up.cookie)
	}
	p.respond(ctx, x, resp, appPolicy(x, x.route.prefix()))
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
	switch {
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%w: no response in time", ErrUpstreamTimeout)
	case errors.As(err, &op):
		var errno syscall.Errno
		if errors.As(op.Err, &errno) {
			return fmt.Errorf("%w: %s: %s", ErrUpstream, op.Op, errno.Error())
		}
		return fmt.Errorf("%w: %s failed", ErrUpstream, op.Op)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, fasthttp.ErrConnectionClosed):
		return fmt.Errorf("%w: connection closed early", ErrUpstream)
	}
	return fmt.Errorf("%w: malformed response", ErrUpstream)
}
