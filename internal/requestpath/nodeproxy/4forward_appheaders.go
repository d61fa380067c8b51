package nodeproxy

import (
	"bytes"

	"github.com/sandgate/sandgate/internal/requestpath/headerrule"
	"github.com/valyala/fasthttp"
)

const frameAncestorsSelf = "frame-ancestors 'self'"

var (
	noStore     = []byte("no-store")
	private     = []byte("private")
	public      = []byte("public")
	cookieToken = []byte("cookie")
)

// appSeen is what secureAppResponse needs to know of an app's response
// headers, noted while they are copied.
type appSeen struct {
	framed           bool // a Content-Security-Policy or X-Frame-Options
	cached, cacheOK  bool // a Cache-Control, and one that says no-store or private
	varied, variesOK bool // a Vary, and one that lists Cookie or *
}

// note records one header of an app's response, and reports whether it
// is copied: an empty Content-Security-Policy, X-Frame-Options,
// Cache-Control or Vary says nothing and is left out, so that what the app
// did send decides alone.
func (s *appSeen) note(name, v []byte) bool {
	switch {
	case bytes.EqualFold(name, cspName), bytes.EqualFold(name, frameOptionsName):
		s.framed = s.framed || len(v) > 0
	case bytes.EqualFold(name, cacheControlName):
		s.cached = s.cached || len(v) > 0
		s.cacheOK = s.cacheOK || hasToken(v, noStore) || hasToken(v, private)
	case bytes.EqualFold(name, varyName):
		s.varied = s.varied || len(v) > 0
		s.variesOK = s.variesOK || hasToken(v, cookieToken) || hasToken(v, []byte("*"))
	default:
		return true
	}
	return len(v) > 0
}

var (
	cspName          = []byte("Content-Security-Policy")
	frameOptionsName = []byte("X-Frame-Options")
	cacheControlName = []byte(fasthttp.HeaderCacheControl)
	varyName         = []byte(fasthttp.HeaderVary)
)

// secure adds what an app's response needs on the way to a browser,
// without overriding the app's own choices:
//   - Content-Security-Policy: frame-ancestors 'self', unless the app sends
//     a Content-Security-Policy or X-Frame-Options of its own (a CSP
//     without frame-ancestors is left alone rather than merged, as a
//     second CSP header could only narrow it further and the app chose it);
//   - Cache-Control: private, unless the app says no-store or private
//     already ("public" becomes "private": the response is one user's);
//   - Vary: Cookie, so no shared cache serves it to another user.
//
// Only an app's Cache-Control or Vary that needs rewriting is read again.
func (s *appSeen) secure(h *fasthttp.ResponseHeader) {
	if !s.framed {
		h.Add("Content-Security-Policy", frameAncestorsSelf)
	}
	switch {
	case !s.cached:
		h.Add(fasthttp.HeaderCacheControl, "private")
	case !s.cacheOK:
		cc := privateCacheControl(joined(h, fasthttp.HeaderCacheControl))
		h.Del(fasthttp.HeaderCacheControl)
		h.AddBytesV(fasthttp.HeaderCacheControl, cc)
	}
	switch {
	case !s.varied:
		h.Add(fasthttp.HeaderVary, "Cookie")
	case !s.variesOK:
		vary := append(joined(h, fasthttp.HeaderVary), ", Cookie"...)
		h.Del(fasthttp.HeaderVary)
		h.AddBytesV(fasthttp.HeaderVary, vary)
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
func (fw *forwarder) appPolicy(x *exchange, locationPrefix string) respPolicy {
	rule := fw.rules.fromApp
	if x.route.origin != "" {
		rule = fw.rules.fromOwnOriginApp
	}
	return respPolicy{rule: rule, locationPrefix: locationPrefix, app: true}
}

// respPolicy says how an upstream response's headers are rewritten.
type respPolicy struct {
	rule *headerrule.Rule
	// locationPrefix, when set, is put before absolute-path Location
	// values ("/u/<user>").
	locationPrefix string
	// app marks an agent app's response (from the pod or a peer proxy):
	// secureAppResponse applies.
	app bool
}

// copyResponse copies status and headers of src onto dst in one pass: the
// headers rp's rule drops are left out (Content-Length is left to the
// body), an absolute-path Location is moved under the user's prefix, and
// an app's response gets the app rules.
func (rp respPolicy) copyResponse(dst, src *fasthttp.ResponseHeader) {
	dst.SetStatusCode(src.StatusCode())
	var seen appSeen
	rp.rule.CopyResponse(dst, src, func(name, v []byte) ([]byte, bool) {
		if rp.app && !seen.note(name, v) {
			return nil, false
		}
		if rp.locationPrefix != "" && bytes.EqualFold(name, locationName) {
			return rewriteLocation(rp.locationPrefix, v), true
		}
		return v, true
	})
	if rp.app {
		seen.secure(dst)
	}
}

var locationName = []byte("location")

// rewriteLocation puts prefix before an absolute-path reference; absolute
// URLs, network-path references ("//host") and relative references are
// left alone.
func rewriteLocation(prefix string, loc []byte) []byte {
	if len(loc) == 0 || loc[0] != '/' || (len(loc) > 1 && (loc[1] == '/' || loc[1] == '\\')) {
		return loc
	}
	out := make([]byte, 0, len(prefix)+len(loc))
	return append(append(out, prefix...), loc...)
}
