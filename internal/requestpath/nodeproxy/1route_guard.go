package nodeproxy

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/valyala/fasthttp"
)

// check refuses a request to an agent that must reach no upstream: one
// with an implausible Host, or an unsafe one another origin's page made.
func (g *guard) check(ctx *fasthttp.RequestCtx, x *exchange) error {
	if !validHost(ctx.Host()) {
		return fmt.Errorf("%w: host", ErrBadRequest)
	}
	return g.checkOrigin(ctx, x)
}

// ownOrigin is scheme://host of the origin the browser sent the request
// to: the user origin in subdomain routing, otherwise the forwarded
// scheme and Host. With secure cookies the browser is on https whatever
// a TLS terminator outside TrustedProxies reports.
func (g *guard) ownOrigin(x *exchange) string {
	if x.route.origin != "" {
		return x.route.origin
	}
	scheme := x.fwd.proto
	if g.cookieSecure {
		scheme = "https"
	}
	return scheme + "://" + strings.ToLower(x.fwd.host)
}

// safeMethod reports the methods a browser may send across origins with
// the user's cookies and that must not change anything.
func safeMethod(m string) bool {
	return m == fasthttp.MethodGet || m == fasthttp.MethodHead || m == fasthttp.MethodOptions
}

// checkOrigin refuses, before any upstream is involved, an unsafe request
// or a WebSocket upgrade to an agent that a page of another origin made:
// sibling user origins are one site, so SameSite=Lax session cookies
// come along with their form posts and upgrades. An Origin other than the
// request's own, or Sec-Fetch-Site cross-site or same-site, is refused;
// a request with neither (a non-browser client) is not a forgery.
func (g *guard) checkOrigin(ctx *fasthttp.RequestCtx, x *exchange) error {
	if !x.ws && safeMethod(x.method) {
		return nil
	}
	h := &ctx.Request.Header
	if o := h.Peek("Origin"); len(o) > 0 && !strings.EqualFold(string(o), g.ownOrigin(x)) {
		return fmt.Errorf("%w: request from another origin", ErrCrossOrigin)
	}
	switch site := h.Peek("Sec-Fetch-Site"); {
	case bytes.EqualFold(site, []byte("cross-site")), bytes.EqualFold(site, []byte("same-site")):
		return fmt.Errorf("%w: request from another site or user origin", ErrCrossOrigin)
	}
	return nil
}

// checkServiceWorker refuses to serve a service worker script (the
// browser marks its fetch "Service-Worker: script") from anywhere but a
// user's own app: the platform's pages never register one, so a script
// from outside /u/<user>/ (or a user origin) could only be an agent's
// attempt to control the platform origin.
func checkServiceWorker(ctx *fasthttp.RequestCtx, x *exchange) error {
	if x.route.kind == routeUser || len(ctx.Request.Header.Peek("Service-Worker")) == 0 {
		return nil
	}
	return fmt.Errorf("%w: outside an agent's scope", ErrServiceWorker)
}
