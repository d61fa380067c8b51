package nodeproxy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/userorigin"
)

// routeOf routes a request. In subdomain routing a Host of the form
// <user>.<UserDomain> is that user's origin, served entirely by their app;
// on any other host /u/<user>/... goes to the auth API, which sends the
// browser to the user's origin with an entry code.
func (p *Proxy) routeOf(ctx *fasthttp.RequestCtx) route {
	uri := ctx.Request.Header.RequestURI()
	if p.opts.RoutingMode != userorigin.Subdomain {
		return parseRoute(uri)
	}
	host := string(ctx.Host())
	if user, ok := userorigin.UserOf(host, p.opts.UserDomain); ok {
		return parseOriginRoute(uri, user, userorigin.RequestOrigin(p.opts.CookieSecure, host))
	}
	r := parseRoute(uri)
	if r.kind == routeUser || r.kind == routeRedirect {
		r.kind, r.user = routeAuthAPI, ""
	}
	return r
}

// appHost is the Host the app is sent: the browser's, except on a user
// origin, where it is the main origin's host. Apps allow-list the Host
// names they serve (DSH_TRUSTED_HOSTS), and one per user could never be
// listed in a shared template; X-Forwarded-Host still names the user
// origin.
func (p *Proxy) appHost(ctx *fasthttp.RequestCtx, x *exchange) string {
	if x.route.origin != "" {
		return p.mainHost
	}
	return string(ctx.Host())
}

// appOrigin is the Origin to send the app instead of origin for a request
// on a user origin, or "" to keep it: the app is told the main host, so a
// same-origin request's Origin (the user origin) becomes the main origin
// to match, as apps and WebSocket upgraders compare the two. A foreign
// Origin is kept, and stays foreign.
func (p *Proxy) appOrigin(x *exchange, origin []byte) string {
	if !strings.EqualFold(string(origin), x.route.origin) {
		return ""
	}
	return p.opts.PublicOrigin
}

// sessionRules are where a request's session comes from: the main
// session cookie, or on a user origin the origin session bound to it.
type sessionRules struct {
	cookie   string
	verifier Verifier
	origin   string
}

func (p *Proxy) sessionRules(r route) sessionRules {
	if r.origin != "" {
		return sessionRules{cookie: p.opts.OriginCookieName, verifier: p.opts.OriginVerifier, origin: r.origin}
	}
	return sessionRules{cookie: p.opts.CookieName, verifier: p.opts.Verifier}
}

// errOtherOrigin: an origin session minted for another origin.
var errOtherOrigin = errors.New("session bound to another origin")

// enter is the entry path of a user origin: the entry code the auth API
// minted is redeemed (once, and only for this origin and user) for an
// origin session, whose host-only cookie is set before the browser goes on
// to next. The code never reaches the app or the access log.
func (p *Proxy) enter(ctx *fasthttp.RequestCtx, x *exchange) {
	if !ctx.IsGet() {
		p.fail(ctx, x, fmt.Errorf("%w: entry takes GET", ErrBadRequest))
		return
	}
	args := ctx.QueryArgs()
	code := args.Peek("code")
	if !validCookieValue(code) {
		p.fail(ctx, x, fmt.Errorf("%w: entry code", ErrBadRequest))
		return
	}
	next := userorigin.SafeNext(string(args.Peek("next")))
	rules := p.sessionRules(x.route)
	r, err := p.renewer.redeem(string(code), x.route.origin, rules.cookie)
	if err == nil {
		c, verr := rules.verifier.Verify(r.token)
		switch {
		case verr != nil:
			err = fmt.Errorf("verify origin session: %w", verr)
		case c.User != x.route.user:
			err = errOtherUser
		case c.Origin != x.route.origin:
			err = errOtherOrigin
		}
	}
	if err != nil {
		if errors.Is(err, errRenewRefused) || errors.Is(err, errOtherUser) || errors.Is(err, errOtherOrigin) {
			err = fmt.Errorf("%w: entry code refused: %w", ErrUnauthenticated, err)
		}
		p.fail(ctx, x, err)
		return
	}
	x.auth = methodCookie
	ctx.Response.Header.Add("Set-Cookie", r.setCookie)
	p.seeOther(ctx, x, next)
}

// toMainOrigin sends a browser that reached a user origin without a usable
// origin session to the same place on the main origin, where the auth API
// mints a new entry code (or shows the login page).
func (p *Proxy) toMainOrigin(ctx *fasthttp.RequestCtx, x *exchange, err error) {
	x.err = err
	p.seeOther(ctx, x, p.opts.PublicOrigin+userPrefix+x.route.user+x.route.target)
}

// seeOther answers 303 to loc without caching or a Referer for the next
// hop.
func (p *Proxy) seeOther(ctx *fasthttp.RequestCtx, x *exchange, loc string) {
	ctx.Response.Header.Set("Location", loc)
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.Response.Header.Set("Referrer-Policy", "no-referrer")
	ctx.SetStatusCode(fasthttp.StatusSeeOther)
	x.status = fasthttp.StatusSeeOther
	p.finish(x)
}
