package nodeproxy

import (
	"errors"
	"fmt"

	"github.com/valyala/fasthttp"
)

// serve is the top-level handler. It runs the stages in order: route and
// guard -> session -> in-flight slot -> wake -> forward (resolve, then a
// hop to the pod's node, or the handshake and the pod on this node; once
// more where the sandbox moved to, if the hop found it gone). It is
// the only code that turns a stage's error or result into an answer
// (answers); the forward stage's own answer is the upstream's.
func (p *Proxy) serve(ctx *fasthttp.RequestCtx) {
	x := p.guard.begin(ctx)
	if err := checkServiceWorker(ctx, x); err != nil {
		p.answers.fail(ctx, x, err)
		return
	}
	switch x.route.kind {
	case routeAuthAPI:
		p.answer(ctx, x, p.forward.toAuthAPI(ctx, x))
		return
	case routeRedirect:
		p.answers.redirect(ctx, x)
		return
	case routeBadPath:
		p.answers.fail(ctx, x, fmt.Errorf("%w: path", ErrBadRequest))
		return
	case routeNoUser:
		p.answers.fail(ctx, x, fmt.Errorf("%w: no such user path", ErrNotFound))
		return
	case routeEnter:
		next, setCookie, err := p.sessions.enter(ctx, x)
		if err != nil {
			p.answers.fail(ctx, x, err)
			return
		}
		p.answers.seeOther(ctx, x, next, setCookie)
		return
	}
	if err := p.guard.check(ctx, x); err != nil {
		p.answers.fail(ctx, x, err)
		return
	}

	id, entry, err := p.sessions.auth(ctx, x)
	if err != nil {
		if x.route.origin != "" && navigation(ctx, x) && errors.Is(err, ErrUnauthenticated) {
			x.err = err
			loc, setCookie := p.sessions.toMainOrigin(ctx, x)
			p.answers.seeOther(ctx, x, loc, setCookie)
			return
		}
		p.answers.fail(ctx, x, err)
		return
	}
	if id.setCookie != "" {
		ctx.Response.Header.Add("Set-Cookie", id.setCookie)
	}
	if err := p.acquire(x); err != nil {
		p.answers.fail(ctx, x, err)
		return
	}
	p.activity.begin(x, entry.Route.Sandbox)
	if entry, err = p.waker.awaitReady(ctx, x, entry); err != nil {
		if errors.Is(err, ErrWakeTimeout) && navigation(ctx, x) {
			p.answers.wakingPage(ctx, x, err)
			return
		}
		p.answers.fail(ctx, x, err)
		return
	}
	p.activity.begin(x, entry.Route.Sandbox)
	err = p.forward.toSandbox(ctx, x, id, entry)
	if errors.Is(err, ErrMoved) {
		// A wake raced a suspend and the pod started on another node
		// than the one hopped to: once more, where this node sees it.
		if entry, err = p.waker.awaitMoved(ctx, x, x.node); err == nil {
			err = p.forward.toSandbox(ctx, x, id, entry)
		}
	}
	p.answer(ctx, x, err)
}

// answer answers a forward that failed before anything was written; one
// that did not has answered already.
func (p *Proxy) answer(ctx *fasthttp.RequestCtx, x *exchange, err error) {
	if err != nil {
		p.answers.fail(ctx, x, err)
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

// serveError answers requests fasthttp could not parse (header too large,
// bad request line, body read timeout before the handler).
func (p *Proxy) serveError(ctx *fasthttp.RequestCtx, err error) {
	p.answers.unparsed(ctx, err)
}

// expect answers "Expect: 100-continue": a declared body over MAX_BODY_MB
// is refused before the client sends it. fasthttp then skips the handler
// and writes the status itself.
func (p *Proxy) expect(ctx *fasthttp.RequestCtx) int {
	if int64(ctx.Request.Header.ContentLength()) <= p.opts.MaxBodyBytes {
		return fasthttp.StatusContinue
	}
	x := p.guard.begin(ctx)
	x.status, x.err = fasthttp.StatusRequestEntityTooLarge, ErrBodyTooLarge
	p.answers.finish(x)
	return fasthttp.StatusRequestEntityTooLarge
}
