package nodeproxy

import (
	"log/slog"
	"strings"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// routeKind says where a request goes.
type routeKind uint8

const (
	// routeAuthAPI: any path outside /u/, served by the auth API.
	routeAuthAPI routeKind = iota
	// routeUser: /u/<user>/..., served by the user's sandbox.
	routeUser
	// routeRedirect: /u/<user>, redirected to /u/<user>/.
	routeRedirect
	// routeBadPath: a path under /u/ that is not plainly inside one
	// user's prefix (traversal, encoded separators, ...): 400.
	routeBadPath
	// routeNoUser: /u/<name>/ where name cannot be a user: 404.
	routeNoUser
	// routeEnter: the entry path on a user origin (subdomain routing),
	// where an entry code becomes an origin session.
	routeEnter

	// routeKinds counts the kinds above; it is not one.
	routeKinds
)

// Route labels of requests that are not told apart by kind.
const (
	routeWebSocket = "websocket"
	routeHopIn     = "hop_in"
	routeUnparsed  = "unparsed" // fasthttp could not parse the request
)

// String names the kind for metrics and logs.
func (k routeKind) String() string {
	switch k {
	case routeUser:
		return "user"
	case routeRedirect:
		return "redirect"
	case routeBadPath:
		return "bad_path"
	case routeNoUser:
		return "no_user"
	case routeEnter:
		return "enter"
	}
	return "authapi"
}

// userPrefix starts every user path.
const userPrefix = "/u/"

// route is a parsed request target. Its strings are copies, safe to keep
// after the request.
type route struct {
	kind routeKind
	user string
	// target is what the user's app is asked for: the path below
	// /u/<user> (always starting with '/') plus the raw query. For
	// routeRedirect it is the redirect location.
	target string
	// path is the request's path without the query, for the access log.
	path string
	// origin is scheme://host of the user origin the request reached in
	// subdomain routing; empty in path routing.
	origin string
	// under is /u/<user> in path routing, empty on a user origin.
	under string
}

// prefix is what the app's absolute paths sit under for the browser, and
// what a hop puts before target: /u/<user>, or nothing on a user origin.
func (r route) prefix() string { return r.under }

// guard is the route stage: begin copies what the later stages need out
// of the request and decides whose forwarded and identity headers count;
// check refuses what must reach no upstream.
type guard struct {
	routing         userorigin.Mode
	userDomain      string
	cookieSecure    bool
	net             network
	nodeName        string
	hopAuth         *hopAuth // nil without a hop key
	authProxySecret []byte
	authProxyHeader string // AuthProxyHeader lower-cased, or ""
	m               *metrics
	log             *slog.Logger
}

// begin copies what the stages and the access log need out of the request.
// Another node's proxy hops only to /u/: elsewhere the hop header earns
// its sender no trust in the forwarded headers. With a hop key, only a hop
// whose proof verifies does; any other is a client's request, though it
// still never hops again or renews a session (hopIn).
func (g *guard) begin(ctx *fasthttp.RequestCtx) *exchange {
	hop := len(ctx.Request.Header.Peek(hopHeader)) > 0
	peer := peerAddr(ctx)
	r := g.routeOf(ctx)
	trust := hopTrust{net: g.net, keyed: g.hopAuth != nil, peer: peer, hop: hop && r.kind == routeUser}
	if trust.hop {
		trust.vouched = g.checkHop(ctx, r, peer)
	}
	host := string(ctx.Host())
	x := &exchange{
		outcome: outcome{start: time.Now()},
		route:   r,
		method:  methodName(ctx.Method()),
		host:    host,
		peer:    peer,
		client:  clientOf(&ctx.Request.Header, peer, trust.trusted),
		hopIn:   hop,
		fwd:     forwardedOf(&ctx.Request.Header, host, peer, ctx.IsTLS(), trust.trusted(peer)),
	}
	if x.route.kind == routeUser {
		x.ws = websocket.FastHTTPIsWebSocketUpgrade(ctx)
	}
	if x.route.kind == routeAuthAPI && isInternal(x.route.path) {
		x.route.kind = routeNoUser
	}
	x.asserted = g.checkIdentity(&ctx.Request.Header, peer)
	return x
}

// methodName is m as a string, without a copy for the common methods.
func methodName(m []byte) string {
	for _, known := range []string{fasthttp.MethodGet, fasthttp.MethodPost, fasthttp.MethodHead, fasthttp.MethodPut,
		fasthttp.MethodPatch, fasthttp.MethodDelete, fasthttp.MethodOptions} {
		if string(m) == known {
			return known
		}
	}
	return string(m)
}

// routeOf routes a request. In subdomain routing a Host of the form
// <user>.<UserDomain> is that user's origin, served entirely by their app;
// on any other host /u/<user>/... goes to the auth API, which sends the
// browser to the user's origin with an entry code.
func (g *guard) routeOf(ctx *fasthttp.RequestCtx) route {
	uri := ctx.Request.Header.RequestURI()
	if g.routing != userorigin.Subdomain {
		return parseRoute(uri)
	}
	host := string(ctx.Host())
	if user, ok := userorigin.UserOf(host, g.userDomain); ok {
		return parseOriginRoute(uri, user, userorigin.RequestOrigin(g.cookieSecure, host))
	}
	r := parseRoute(uri)
	if r.kind == routeUser || r.kind == routeRedirect {
		r.kind, r.user, r.under = routeAuthAPI, "", ""
	}
	return r
}

// parseRoute classifies a raw request target. It decides on the raw bytes
// and refuses, rather than normalises, anything whose decoded and cleaned
// path could differ from what it routes by: dot segments, empty segments,
// backslashes, encoded '.', '/' or '\', control bytes, bad escapes and
// non-ASCII. So a request routed to user U never names another user or
// leaves /u/U/ once decoded.
func parseRoute(uri []byte) route {
	s := string(uri)
	if s == "" || s[0] != '/' {
		return route{kind: routeBadPath, path: "-"}
	}
	path, query, hasQuery := strings.Cut(s, "?")
	if !strings.HasPrefix(path, userPrefix) {
		return route{kind: routeAuthAPI, path: path}
	}
	if !cleanPath(path) || !cleanQuery(query) {
		return route{kind: routeBadPath, path: "-"}
	}
	rest := path[len(userPrefix):]
	user, _, found := strings.Cut(rest, "/")
	if account.ValidateUser(user) != nil {
		return route{kind: routeNoUser, path: path}
	}
	if !found {
		target := path + "/"
		if hasQuery {
			target += "?" + query
		}
		return route{kind: routeRedirect, user: user, target: target, path: path}
	}
	// s is path, then "?" and the query when there is one: the target is
	// all of it after /u/<user>, and costs no copy.
	under := len(userPrefix) + len(user)
	return route{kind: routeUser, user: user, target: s[under:], path: path, under: s[:under]}
}

// parseOriginRoute classifies a raw request target on user's own origin
// (subdomain routing): the whole path belongs to the user's app, except the
// entry path. The same cleanliness rules as under /u/ apply.
func parseOriginRoute(uri []byte, user, origin string) route {
	s := string(uri)
	if s == "" || s[0] != '/' {
		return route{kind: routeBadPath, path: "-"}
	}
	path, query, _ := strings.Cut(s, "?")
	if !cleanPath(path) || !cleanQuery(query) {
		return route{kind: routeBadPath, path: "-"}
	}
	kind := routeUser
	if path == userorigin.EnterPath {
		kind = routeEnter
	}
	return route{kind: kind, user: user, target: s, path: path, origin: origin}
}

// cleanPath reports whether path (starting with '/') is already in the
// form path.Clean and a single percent-decoding leave unchanged, apart from
// a trailing slash: no empty, "." or ".." segment, no backslash, no escape
// that decodes to '.', '/', '\' or a control byte, no malformed escape, and
// only printable ASCII (non-ASCII must arrive percent-encoded).
func cleanPath(path string) bool {
	segStart := 1
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		seg := path[segStart:i]
		// An empty segment is allowed only as the trailing slash.
		if (seg == "" && i != len(path)) || seg == "." || seg == ".." {
			return false
		}
		if !cleanSegment(seg) {
			return false
		}
		segStart = i + 1
	}
	return true
}

func cleanSegment(seg string) bool {
	// "..;x" is a dot segment to servers that strip path parameters.
	if name, _, _ := strings.Cut(seg, ";"); name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		switch {
		case c <= ' ' || c >= 0x7f || c == '\\' || c == '#':
			return false
		case c == '%':
			if i+2 >= len(seg) {
				return false
			}
			d, ok := unhex2(seg[i+1], seg[i+2])
			if !ok || d < 0x20 || d == 0x7f || d == '.' || d == '/' || d == '\\' {
				return false
			}
			i += 2
		}
	}
	return true
}

// cleanQuery reports whether a raw query holds only printable ASCII and no
// fragment.
func cleanQuery(q string) bool {
	for i := 0; i < len(q); i++ {
		if c := q[i]; c <= ' ' || c >= 0x7f || c == '#' {
			return false
		}
	}
	return true
}

func unhex2(a, b byte) (byte, bool) {
	x, ok1 := unhex(a)
	y, ok2 := unhex(b)
	return x<<4 | y, ok1 && ok2
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
