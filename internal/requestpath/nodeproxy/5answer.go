package nodeproxy

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/webpage"
)

// answers is the one writer of the proxy's own answers: the handler
// turns every stage's error or result into a response, a page or a
// WebSocket close here, and every request, proxied or not, ends in finish,
// which counts it and writes its access-log line.
type answers struct {
	publicOrigin string
	retryAfter   time.Duration
	wakeTimeout  time.Duration
	now          func() time.Time
	directory    Directory
	sessions     sessionRuleSet
	waker        *waker
	// upgrader answers a WebSocket handshake, bridged or refused, within
	// upgradeTimeout (WRITE_TIMEOUT + HEADER_TIMEOUT).
	upgrader       websocket.FastHTTPUpgrader
	upgradeTimeout time.Duration
	inflight       *inFlight
	activity       tracker
	m              *metrics
	access         *slog.Logger
	successes      *successes // nil when every request gets its own line
}

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
func (a *answers) reply(ctx *fasthttp.RequestCtx, x *exchange, status int, body []byte) {
	ctx.SetStatusCode(status)
	if body != nil {
		ctx.SetBody(body)
	}
	x.status = status
	a.finish(x)
}

// fail answers a request that ends early: a page for a browser
// navigation, else the outcome's plain answer. A WebSocket upgrade is
// accepted and then closed with the outcome's close code, as browsers only
// see close codes; one from another origin gets a plain 403 and no socket.
func (a *answers) fail(ctx *fasthttp.RequestCtx, x *exchange, err error) {
	x.err = err
	if x.ws && !errors.Is(err, ErrCrossOrigin) {
		a.rejectWS(ctx, x, err)
		return
	}
	res := resultOf(err)
	if x.hopIn && errors.Is(err, ErrHopLoop) {
		ctx.Response.Header.Set(movedHeader, "1")
	}
	ctx.Response.Header.Set("Content-Type", "text/plain; charset=utf-8")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.Response.Header.Set("X-Content-Type-Options", "nosniff")
	if res.retryAfter {
		ctx.Response.Header.Set("Retry-After", fmt.Sprint(int((a.retryAfter+time.Second-1)/time.Second)))
	}
	if res.status == fasthttp.StatusUnauthorized {
		ctx.Response.Header.Set("WWW-Authenticate", `Bearer realm="sandgate"`)
	}
	if hasBody(&ctx.Request.Header) {
		// The body may be unread: do not leave it to be parsed as the
		// next request.
		closeAfterAnswer(ctx)
	}
	if a.errorPage(ctx, x, err, res) {
		return
	}
	a.reply(ctx, x, res.status, []byte(res.message+"\n"))
}

// writePage ends the exchange with m as a page of status, with the
// security headers of every sandgate page.
func (a *answers) writePage(ctx *fasthttp.RequestCtx, x *exchange, status int, m webpage.Message) {
	var buf bytes.Buffer
	_ = webpage.Render(&buf, m) // a fixed template: only a write to buf, which cannot fail
	for _, kv := range webpage.Headers(pageCSP) {
		ctx.Response.Header.Set(kv[0], kv[1])
	}
	a.reply(ctx, x, status, buf.Bytes())
}

// finish releases the request's slot and activity, counts it and writes
// its access-log line (or counts it in the summary of plain successes). It runs once, when the response (or WebSocket) has
// ended.
func (a *answers) finish(x *exchange) {
	if !x.finished.CompareAndSwap(false, true) {
		return
	}
	if x.slot {
		a.inflight.release(x.route.user)
		a.m.inFlight.Dec()
	}
	a.activity.end(x)
	elapsed := time.Since(x.start)
	a.m.observeRequest(x, elapsed)
	a.m.countRequest(x)
	if a.successes != nil && plain(x) {
		a.successes.add(x, elapsed)
		return
	}
	a.logAccess(x, elapsed)
}

// rejectWS accepts the upgrade and closes at once with the outcome's close
// code: 4401 when authentication failed, 1011 otherwise.
func (a *answers) rejectWS(ctx *fasthttp.RequestCtx, x *exchange, err error) {
	res := resultOf(err)
	a.upgrade(ctx, x, "", func(c *websocket.Conn) {
		x.wsClose = res.wsClose
		c.WriteControl(websocket.CloseMessage, closeMessage(res.wsClose, res.message), time.Now().Add(closeWait))
		c.SetReadDeadline(time.Now().Add(closeWait))
		for {
			if _, _, err := c.NextReader(); err != nil {
				break
			}
		}
		c.Close()
		a.finish(x)
	}, nil)
}

// redirect sends /u/<user> to /u/<user>/, keeping the method for
// non-GET requests.
func (a *answers) redirect(ctx *fasthttp.RequestCtx, x *exchange) {
	status := fasthttp.StatusMovedPermanently
	if !ctx.IsGet() && !ctx.IsHead() {
		status = fasthttp.StatusPermanentRedirect
	}
	ctx.Response.Header.Set("Location", x.route.target)
	ctx.Response.Header.Set("Cache-Control", "no-store")
	a.reply(ctx, x, status, nil)
}

// seeOther answers 303 to loc without caching or a Referer for the next
// hop, setting the cookies given.
func (a *answers) seeOther(ctx *fasthttp.RequestCtx, x *exchange, loc string, setCookies ...string) {
	for _, c := range setCookies {
		ctx.Response.Header.Add("Set-Cookie", c)
	}
	ctx.Response.Header.Set("Location", loc)
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.Response.Header.Set("Referrer-Policy", "no-referrer")
	a.reply(ctx, x, fasthttp.StatusSeeOther, nil)
}

// unparsed answers a request fasthttp could not parse (header too large,
// bad request line, body read timeout before the handler).
func (a *answers) unparsed(ctx *fasthttp.RequestCtx, err error) {
	status := fasthttp.StatusBadRequest
	var timeout interface{ Timeout() bool }
	if _, ok := errors.AsType[*fasthttp.ErrSmallBuffer](err); ok {
		status = fasthttp.StatusRequestHeaderFieldsTooLarge
	} else if errors.As(err, &timeout) && timeout.Timeout() {
		status = fasthttp.StatusRequestTimeout
	}
	ctx.SetStatusCode(status)
	ctx.SetConnectionClose()
	a.logUnparsed(status, peerAddr(ctx).String())
	a.m.requests.WithLabelValues(routeUnparsed, codeClass(status)).Inc()
}
