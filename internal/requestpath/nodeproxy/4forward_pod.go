package nodeproxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// toPod forwards to a pod on this node: the request goes with the app's
// cookie, and is sent once more with a refreshed handshake if the app
// answers 401 and the body can be sent again (appRetry). A WebSocket dial
// gets the same headers.
func (fw *forwarder) toPod(ctx *fasthttp.RequestCtx, x *exchange, up upstream) error {
	x.app = appRetry{up: up}
	if x.route.origin != "" {
		x.app.userOrigin, x.app.mainOrigin = x.route.origin, fw.publicOrigin
	}
	return fw.forward(ctx, x, forwarding{
		upstream:  upstreamPod,
		base:      "http://",
		host:      up.target.Addr,
		target:    x.route.target,
		headers:   fw.rules.toApp,
		own:       &x.app,
		app:       &x.app,
		failed:    unmapped,
		wsFailure: "WebSocket dial",
		resp:      fw.appPolicy(x, x.route.prefix()),
	})
}

// appRetry is what the retry rule of a pod's app keeps of one request:
// the cookie, replaced by each refresh, and on a user origin the origins
// the app is told apart. It lives on the exchange.
type appRetry struct {
	up upstream
	// userOrigin is the request's user origin, "" on the main origin;
	// mainOrigin is PublicOrigin, which the app knows in its place.
	userOrigin, mainOrigin string
}

// set sends the app's cookie, and on a user origin the main host and the
// main origin in place of the user origin: the app is told the main host,
// so a same-origin request's Origin must match it, as apps and WebSocket
// upgraders compare the two. A foreign Origin is kept, and stays foreign.
func (a *appRetry) set(h outHeader, _ string) {
	h.Set("Cookie", a.up.cookie)
	if a.userOrigin == "" {
		return
	}
	h.SetHost(a.up.target.Host)
	if a.mainOrigin != "" && strings.EqualFold(h.Get("Origin"), a.userOrigin) {
		h.Set("Origin", a.mainOrigin)
	}
}

// roundTrip sends one request upstream and returns the response with its
// body still streaming. The browser's Host is kept unless headers sets
// another. A body that cannot be sent again goes on a new connection.
func (fw *forwarder) roundTrip(ctx *fasthttp.RequestCtx, uri string, b *body, headers func(*fasthttp.RequestHeader)) (*fasthttp.Response, error) {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.SetRequestURI(uri)
	req.Header.SetMethodBytes(ctx.Method())
	req.UseHostHeader = true
	req.Header.SetHostBytes(ctx.Host())
	headers(&req.Header)
	b.attach(req)
	client := fw.client
	if !b.complete() {
		client = fw.uploads.client
		req.SetConnectionClose()
	}
	resp := fasthttp.AcquireResponse()
	start := time.Now()
	err := client.Do(req, resp)
	fw.m.observe(stageUpstream, start)
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
