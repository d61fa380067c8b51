package nodeproxy

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/userorigin"
	"github.com/sandgate/sandgate/internal/webpage"
)

// pageCSP is the Content-Security-Policy of the node proxy's own pages.
var pageCSP = webpage.CSP()

// browserPage reports whether a request is a browser loading a page into a
// tab: a GET that asks for HTML and, when the browser says so, is a
// top-level document navigation. Sub-resources, fetches, frames and
// WebSockets are not; they keep the plain answers API clients get.
func browserPage(ctx *fasthttp.RequestCtx, x *exchange) bool {
	if x.ws || !ctx.IsGet() || !bytes.Contains(ctx.Request.Header.Peek("Accept"), []byte("text/html")) {
		return false
	}
	if dest := ctx.Request.Header.Peek("Sec-Fetch-Dest"); len(dest) > 0 && string(dest) != "document" {
		return false
	}
	if mode := ctx.Request.Header.Peek("Sec-Fetch-Mode"); len(mode) > 0 && string(mode) != "navigate" {
		return false
	}
	return true
}

// errorPage answers a browser navigation that ends in 401, 403, 404, 429
// or 503 with a page that says what happened and links to the next step,
// instead of the plain body other clients get; the status and headers are
// the plain answer's, except that a signed-in user on another user's path
// gets 403 and a link to their own agent. A wake the auth API could not be
// asked for gets the waking page. It reports whether it answered.
func (a *answers) errorPage(ctx *fasthttp.RequestCtx, x *exchange, err error, res result) bool {
	if !browserPage(ctx, x) {
		return false
	}
	status, m := res.status, webpage.Message{Alert: true}
	retry := string(ctx.Response.Header.Peek("Retry-After"))
	switch {
	case status == fasthttp.StatusUnauthorized:
		owner, signedIn := a.otherUser(ctx, x, err)
		if signedIn {
			status = fasthttp.StatusForbidden
		}
		m = a.notSignedIn(ctx, x, owner)
	case status == fasthttp.StatusForbidden:
		m.Title = "Request refused"
		m.Lines = []string{"This request was refused: " + res.message + "."}
		m.Links = []webpage.Link{{Href: a.mainURL(x, "/"), Text: "Back to the start page"}}
	case status == fasthttp.StatusNotFound:
		m.Title = "Not found"
		m.Lines = []string{"There is no agent at this address."}
		m.Links = []webpage.Link{{Href: a.mainURL(x, "/"), Text: "Back to the start page"}}
	case errors.Is(err, ErrInvalidConfiguration):
		m.Title = "Your agent cannot start"
		m.Lines = []string{
			"The cluster rejected your agent's configuration (InvalidConfiguration), so it cannot start, and trying again will not help.",
			"An operator must fix it: tell the people who run this service. Your workspace is kept.",
		}
		m.Links = []webpage.Link{{Href: a.mainURL(x, "/"), Text: "Your account"}}
	case wakeOutage(err):
		refresh, _ := strconv.Atoi(retry)
		m = wakingMessage(a.wakeView(x, refresh))
	case status == fasthttp.StatusTooManyRequests, status == fasthttp.StatusServiceUnavailable:
		m.Title = "Try again shortly"
		if status == fasthttp.StatusTooManyRequests {
			m.Title = "Too many attempts"
		}
		m.Lines = []string{capitalize(res.message) + "."}
		if retry != "" {
			m.Lines = append(m.Lines, "This page tries again by itself in "+retry+" s.")
			fmt.Sscan(retry, &m.Refresh)
		}
		m.Links = []webpage.Link{{Href: a.mainURL(x, "/"), Text: "Your account", Secondary: true}}
	default:
		return false
	}
	a.writePage(ctx, x, status, m)
	return true
}

// otherUser names the user a request's session belongs to when it failed
// only because that is not the path's user. The name chooses a link; it
// grants nothing.
func (a *answers) otherUser(ctx *fasthttp.RequestCtx, x *exchange, err error) (string, bool) {
	if !errors.Is(err, errOtherUser) {
		return "", false
	}
	rules := a.sessions.of(x.route)
	for _, tok := range readCredentials(&ctx.Request.Header, rules.cookie).cookies {
		if c, err := rules.verifier.VerifyIgnoringExpiry(tok); err == nil && c.User != x.route.user {
			return c.User, true
		}
	}
	return "", false
}

// notSignedIn is the page for a request without a session for its path's
// user: signed out, or signed in as owner. A path whose account the
// informer does not hold says so rather than offer a sign-in into it.
func (a *answers) notSignedIn(ctx *fasthttp.RequestCtx, x *exchange, owner string) webpage.Message {
	m := webpage.Message{Alert: true}
	_, lookupErr := a.directory.Lookup(x.route.user)
	switch {
	case errors.Is(lookupErr, informer.ErrNoAccount):
		m.Title = "No agent at this address"
		m.Lines = []string{"There is no account named " + x.route.user + ", so there is no agent here."}
	case owner != "":
		m.Title = "Not your agent"
		m.Lines = []string{"This agent is not yours."}
	default:
		m.Title = "Sign in required"
		m.Lines = []string{"Sign in with your user name and access token to open this agent."}
		m.Links = []webpage.Link{{Href: a.signInURL(ctx, x), Text: "Sign in"}}
		return m
	}
	if owner == "" {
		m.Lines = append(m.Lines, "Sign in to open your own agent.")
		m.Links = []webpage.Link{{Href: a.mainURL(x, "/"), Text: "Sign in"}}
		return m
	}
	m.Lines = append(m.Lines, "You are signed in as "+owner+".")
	m.Links = []webpage.Link{{Href: a.mainURL(x, "/u/"+owner+"/"), Text: "Open your own agent"},
		{Href: a.mainURL(x, "/"), Text: "Your account", Secondary: true}}
	return m
}

// signInURL is the main origin's sign-in page with next, the path x asked
// for as the main origin names it (/u/<user>/...), where the auth API
// returns the browser once it has signed in. A refused entry on a user
// origin names the path that entry was to go on to.
func (a *answers) signInURL(ctx *fasthttp.RequestCtx, x *exchange) string {
	target := x.route.target
	if x.route.kind == routeEnter {
		target = userorigin.SafeNext(string(ctx.QueryArgs().Peek("next")))
	}
	return a.mainURL(x, "/?next="+url.QueryEscape(userPrefix+x.route.user+target))
}

// wakeOutage reports whether err is a wake the auth API could not be asked
// for.
func wakeOutage(err error) bool {
	d, ok := errors.AsType[*authAPIDown](err)
	return ok && d.call == callWake
}

// mainURL is path on the main origin: relative in path routing, under
// PUBLIC_ORIGIN on a user origin.
func (a *answers) mainURL(x *exchange, path string) string {
	if x.route.origin != "" && a.publicOrigin != "" {
		return strings.TrimSuffix(a.publicOrigin, "/") + path
	}
	return path
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
