package nodeproxy

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// sharedOriginHeaders act on a whole origin, not on the response that
// carries them. In path routing every agent shares the platform origin,
// so an app may not send them: Service-Worker-Allowed would let a service
// worker take over "/", NEL and Report-To would report every page of the
// origin to the app, Alt-Svc would move the origin's traffic elsewhere,
// and Strict-Transport-Security is the platform's to set.
// Cross-Origin-Opener-Policy: the auth API's token pages send
// same-origin so that no window an agent's script holds can reach them;
// an app page with same-origin too would share their browsing context
// group, and keep its handle on a token page it opened.
var sharedOriginHeaders = map[string]bool{
	"service-worker-allowed": true, "nel": true, "report-to": true, "alt-svc": true,
	"strict-transport-security": true, "cross-origin-opener-policy": true,
}

// siteHeaders act beyond the origin that sends them: Clear-Site-Data's
// "cookies" clears the cookies of the whole registrable domain, which all
// user origins share with the main one. No app may send them in either
// routing mode.
var siteHeaders = map[string]bool{"clear-site-data": true}

// dropFromApp reports whether an app's response header (lower-case name)
// is removed: site-wide ones always, origin-wide ones when the app shares
// the platform origin.
func dropFromApp(name []byte, sharedOrigin bool) bool {
	return siteHeaders[string(name)] || (sharedOrigin && sharedOriginHeaders[string(name)])
}

const frameAncestorsSelf = "frame-ancestors 'self'"

var (
	noStore     = []byte("no-store")
	private     = []byte("private")
	public      = []byte("public")
	cookieToken = []byte("cookie")
)

// secureAppResponse adds what an app's response needs on the way to a
// browser, without overriding the app's own choices:
//   - Content-Security-Policy: frame-ancestors 'self', unless the app sends
//     a Content-Security-Policy or X-Frame-Options of its own (a CSP
//     without frame-ancestors is left alone rather than merged, as a
//     second CSP header could only narrow it further and the app chose it);
//   - Cache-Control: private, unless the app says no-store or private
//     already ("public" becomes "private": the response is one user's);
//   - Vary: Cookie, so no shared cache serves it to another user.
func secureAppResponse(h *fasthttp.ResponseHeader) {
	if len(h.Peek("Content-Security-Policy")) == 0 && len(h.Peek("X-Frame-Options")) == 0 {
		h.Set("Content-Security-Policy", frameAncestorsSelf)
	}
	cc := joined(h, fasthttp.HeaderCacheControl)
	switch {
	case len(cc) == 0:
		h.Set(fasthttp.HeaderCacheControl, "private")
	case hasToken(cc, noStore), hasToken(cc, private):
	default:
		h.SetBytesV(fasthttp.HeaderCacheControl, privateCacheControl(cc))
	}
	vary := joined(h, fasthttp.HeaderVary)
	switch {
	case len(vary) == 0:
		h.Set(fasthttp.HeaderVary, "Cookie")
	case hasToken(vary, cookieToken), hasToken(vary, []byte("*")):
	default:
		h.SetBytesV(fasthttp.HeaderVary, append(append([]byte(nil), vary...), ", Cookie"...))
	}
}

// joined is every value of a list header as one, so a rewrite replaces
// them all.
func joined(h *fasthttp.ResponseHeader, name string) []byte {
	var out []byte
	for _, v := range h.PeekAll(name) {
		if len(out) > 0 {
			out = append(out, ", "...)
		}
		out = append(out, v...)
	}
	return out
}

// privateCacheControl is an app's Cache-Control with "public" dropped and
// "private" added.
func privateCacheControl(cc []byte) []byte {
	out := []byte("private")
	for d := range bytes.SplitSeq(cc, []byte(",")) {
		d = bytes.TrimSpace(d)
		if len(d) == 0 || bytes.EqualFold(d, public) {
			continue
		}
		out = append(append(out, ", "...), d...)
	}
	return out
}

// hasToken reports whether a comma-separated header value lists tok as a
// directive name (case-insensitive, "max-age=1" names "max-age").
func hasToken(v, tok []byte) bool {
	for d := range bytes.SplitSeq(v, []byte(",")) {
		name, _, _ := bytes.Cut(bytes.TrimSpace(d), []byte("="))
		if bytes.EqualFold(bytes.TrimSpace(name), tok) {
			return true
		}
	}
	return false
}

// appPolicy is how an app's response to x is rewritten, with Location
// values moved under locationPrefix.
func appPolicy(x *exchange, locationPrefix string) respPolicy {
	return respPolicy{locationPrefix: locationPrefix, app: true, sharedOrigin: x.route.origin == ""}
}
