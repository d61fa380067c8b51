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
func (fw *forwarder) toAuthAPI(ctx *fasthttp.RequestCtx, x *exchange) error {
	return fw.forward(ctx, x, forwarding{
		upstream:    upstreamAuthAPI,
		base:        fw.authAPI.public,
		target:      string(ctx.Request.Header.RequestURI()),
		headers:     headerrule.Pair{HTTP: fw.authAPIRule(x)},
		own:         noOwnHeaders{},
		authAPIBody: true,
		failed:      fw.authAPI.forwardFailed,
		resp:        respPolicy{rule: fw.rules.fromAuthAPI},
	})
}

// readAuthAPIBody reads a body bound for the auth API whole: anyone may
// send one before signing in, so it is capped at the auth API's own limit,
// must arrive within HeaderTimeout (the auth API's forms are as small as a
// header block), and counts against the bytes its client and all clients
// may have buffered. release gives the bytes back.
func (fw *forwarder) readAuthAPIBody(ctx *fasthttp.RequestCtx, x *exchange) (*body, func(), error) {
	limit := min(fw.maxBodyBytes, authAPIMaxBodyBytes)
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
	if err := fw.bodies.reserve(client, reserve); err != nil {
		return nil, nil, err
	}
	release := func() { fw.bodies.release(client, reserve) }
	if ctx.RequestBodyStream() != nil { // else the body is in memory already
		if err := ctx.SetReadDeadline(time.Now().Add(fw.headerTimeout)); err != nil {
			release()
			return nil, nil, fmt.Errorf("%w: set body deadline: %w", ErrClientClosed, err)
		}
	}
	b, err := fw.readBodyUpTo(ctx, x, limit, int(limit))
	if err != nil {
		release()
		return nil, nil, err
	}
	return b, release, nil
}

// authAPIRule is the header rule of x to the auth API: identity headers
// pass only when the SSO proxy proved them (checkIdentity).
func (fw *forwarder) authAPIRule(x *exchange) *headerrule.Rule {
	if x.asserted {
		return fw.rules.toAuthAPIAsserted
	}
	return fw.rules.toAuthAPI
}
