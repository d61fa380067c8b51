package nodeproxy

import (
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/clientaddr"
	"github.com/sandgate/sandgate/internal/requestpath/headerrule"
)

// toAuthAPI forwards a request outside /u/ to the auth API, so the browser
// sees one origin. The request keeps its Host, cookies and credentials;
// X-Forwarded-For is the peer, after what a trusted proxy forwarded;
// identity headers pass only when the SSO proxy's identity is proven
// (checkIdentity). The response passes
// through, Set-Cookie included. When no replica answers, the client gets
// 503 with Retry-After (ErrAuthAPIUnavailable), never a sign-in prompt.
func (p *Proxy) toAuthAPI(ctx *fasthttp.RequestCtx, x *exchange) {
	p.forward(ctx, x, forwarding{
		upstream:    upstreamAuthAPI,
		base:        p.authAPI.public,
		target:      string(ctx.Request.Header.RequestURI()),
		headers:     headerrule.Pair{HTTP: p.authAPIRule(x)},
		own:         noOwnHeaders{},
		authAPIBody: true,
		failed:      p.authAPI.forwardFailed,
		resp:        respPolicy{rule: p.rules.fromAuthAPI},
	})
}

// readAuthAPIBody reads a body bound for the auth API whole: anyone may
// send one before signing in, so it is capped at the auth API's own limit,
// must arrive within HeaderTimeout (the auth API's forms are as small as a
// header block), and counts against the bytes its client and all clients
// may have buffered. release gives the bytes back.
func (p *Proxy) readAuthAPIBody(ctx *fasthttp.RequestCtx, x *exchange) (*body, func(), error) {
	limit := min(p.opts.MaxBodyBytes, authAPIMaxBodyBytes)
	cl := int64(ctx.Request.Header.ContentLength())
	reserve := limit // chunked: whatever may come
	switch {
	case cl == 0 || cl < -1:
		return &emptyBody, noRelease, nil
	case cl > limit:
		return nil, nil, fmt.Errorf("%w: %d bytes declared for the auth API", ErrBodyTooLarge, cl)
	case cl > 0:
		reserve = cl
	}
	client := clientaddr.Key(x.client)
	if err := p.inflight.bodies.reserve(client, reserve); err != nil {
		return nil, nil, err
	}
	release := func() { p.inflight.bodies.release(client, reserve) }
	if ctx.RequestBodyStream() != nil { // else the body is in memory already
		if err := ctx.SetReadDeadline(time.Now().Add(p.opts.HeaderTimeout)); err != nil {
			release()
			return nil, nil, fmt.Errorf("%w: set body deadline: %w", ErrClientClosed, err)
		}
	}
	b, err := p.readBodyUpTo(ctx, x, limit, int(limit))
	if err != nil {
		release()
		return nil, nil, err
	}
	return b, release, nil
}

// authAPIRule is the header rule of x to the auth API: identity headers
// pass only when the SSO proxy proved them (checkIdentity).
func (p *Proxy) authAPIRule(x *exchange) *headerrule.Rule {
	if x.asserted {
		return p.rules.toAuthAPIAsserted
	}
	return p.rules.toAuthAPI
}
