package nodeproxy

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/webpage"
)

// outcome is how one request ended: its status, the reason when it was
// refused or failed, the bytes sent and its timings. The stages and the
// forwarding fill it in; the methods in this file are the only ones that
// answer for the proxy itself (refusals, error pages, redirects) and the
// only ones that count a request and write its access-log line.
type outcome struct {
	start    time.Time
	status   int
	err      error // why the request was refused or failed
	bytesOut int64
	aborted  bool // the client went away before the response ended
	wsClose  int  // WebSocket close code sent to the client
	finished atomic.Bool
}

// reply ends the request with the proxy's own answer: status and body
// (none when nil), on top of the headers already set.
func (p *Proxy) reply(ctx *fasthttp.RequestCtx, x *exchange, status int, body []byte) {
	ctx.SetStatusCode(status)
	if body != nil {
		ctx.SetBody(body)
	}
	x.status = status
	p.finish(x)
}

// fail answers a request that ends early: a page for a browser
// navigation, else the outcome's plain answer. A WebSocket upgrade is
// accepted and then closed with the outcome's close code, as browsers only
// see close codes; one from another origin gets a plain 403 and no socket.
func (p *Proxy) fail(ctx *fasthttp.RequestCtx, x *exchange, err error) {
	x.err = err
	if x.ws && !errors.Is(err, ErrCrossOrigin) {
		p.rejectWS(ctx, x, err)
		return
	}
	res := resultOf(err)
	ctx.Response.Header.Set("Content-Type", "text/plain; charset=utf-8")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.Response.Header.Set("X-Content-Type-Options", "nosniff")
	if res.retryAfter {
		ctx.Response.Header.Set("Retry-After", fmt.Sprint(int((p.opts.RetryAfter+time.Second-1)/time.Second)))
	}
	if res.status == fasthttp.StatusUnauthorized {
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="sandgate"`)
	}
	if cl := ctx.Request.Header.ContentLength(); cl > 0 || cl == -1 {
		// The body may be unread: do not leave it to be parsed as the
		// next request.
		closeAfterAnswer(ctx)
	}
	if p.errorPage(ctx, x, err, res) {
		return
	}
	p.reply(ctx, x, res.status, []byte(res.message+"\n"))
}

// writePage ends the exchange with m as a page of status, with the
// security headers of every sandgate page.
func (p *Proxy) writePage(ctx *fasthttp.RequestCtx, x *exchange, status int, m webpage.Message) {
	var buf bytes.Buffer
	_ = webpage.Render(&buf, m) // a fixed template: only a write to buf, which cannot fail
	for _, kv := range webpage.Headers(pageCSP) {
		ctx.Response.Header.Set(kv[0], kv[1])
	}
	p.reply(ctx, x, status, buf.Bytes())
}

// finish releases the request's slot and activity, counts it and writes
// its access-log line (or counts it in the summary of plain successes). It runs once, when the response (or WebSocket) has
// ended.
func (p *Proxy) finish(x *exchange) {
	if !x.finished.CompareAndSwap(false, true) {
		return
	}
	if x.slot {
		p.inflight.release(x.route.user)
		p.m.inFlight.Dec()
	}
	if x.tracked {
		if x.upgraded {
			p.opts.Activity.EndWebSocket(x.act)
		} else {
			p.opts.Activity.End(x.act)
		}
	}
	elapsed := time.Since(x.start)
	p.m.observeRequest(x, elapsed)
	p.m.requests.WithLabelValues(x.routeLabel(), codeClass(x.status)).Inc()
	if p.successes != nil && plain(x) {
		p.successes.add(x, elapsed)
		return
	}
	p.logAccess(x, elapsed)
}

// serveError answers requests fasthttp could not parse (header too large,
// bad request line, body read timeout before the handler).
func (p *Proxy) serveError(ctx *fasthttp.RequestCtx, err error) {
	status := fasthttp.StatusBadRequest
	var timeout interface{ Timeout() bool }
	if _, ok := errors.AsType[*fasthttp.ErrSmallBuffer](err); ok {
		status = fasthttp.StatusRequestHeaderFieldsTooLarge
	} else if errors.As(err, &timeout) && timeout.Timeout() {
		status = fasthttp.StatusRequestTimeout
	}
	ctx.SetStatusCode(status)
	ctx.SetConnectionClose()
	p.logUnparsed(status, peerAddr(ctx).String())
	p.m.requests.WithLabelValues(routeUnparsed, codeClass(status)).Inc()
}

// expect answers "Expect: 100-continue": a declared body over MAX_BODY_MB
// is refused before the client sends it. fasthttp then skips the handler
// and writes the status itself.
func (p *Proxy) expect(ctx *fasthttp.RequestCtx) int {
	if int64(ctx.Request.Header.ContentLength()) <= p.opts.MaxBodyBytes {
		return fasthttp.StatusContinue
	}
	x := p.begin(ctx)
	x.status, x.err = fasthttp.StatusRequestEntityTooLarge, ErrBodyTooLarge
	p.finish(x)
	return fasthttp.StatusRequestEntityTooLarge
}
