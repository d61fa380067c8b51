package nodeproxy

import (
	"bytes"
	"net/http"
	"net/netip"

	"github.com/valyala/fasthttp"
)

// hopByHop are the RFC 9110 connection-specific headers, lower case. They
// never cross the proxy in either direction.
var hopByHop = map[string]bool{
	"connection": true, "keep-alive": true, "proxy-authenticate": true, "proxy-authorization": true,
	"proxy-connection": true, "te": true, "trailer": true, "transfer-encoding": true, "upgrade": true,
}

// bodyHeaders describe the forwarded body, so they pass even in allowlist
// mode.
var bodyHeaders = map[string]bool{"content-type": true, "content-encoding": true}

// wsHandshakeHeaders are set by the WebSocket dialer itself.
var wsHandshakeHeaders = map[string]bool{
	"sec-websocket-key": true, "sec-websocket-version": true, "sec-websocket-extensions": true,
	"sec-websocket-protocol": true, "sec-websocket-accept": true,
}

// maxHeaderName bounds the names lower-cased on the stack; longer names are
// never special and go through the slow path.
const maxHeaderName = 64

// lower returns b lower-cased in buf (ASCII only).
func lower(buf *[maxHeaderName]byte, b []byte) []byte {
	if len(b) > len(buf) {
		return bytes.ToLower(b)
	}
	out := buf[:len(b)]
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// headerPolicy decides which client request headers reach the app.
type headerPolicy struct {
	allow map[string]bool // lower-case names; nil selects the denylist
	// authProxy is the configured AuthProxyHeader, lower case, or "":
	// whatever its name, it is an identity header.
	authProxy string
}

// connectionTokens lists the headers a Connection header names (lower
// case); they are hop-by-hop too.
func connectionTokens(h *fasthttp.RequestHeader) [][]byte {
	v := h.Peek("Connection")
	if len(v) == 0 {
		return nil
	}
	var out [][]byte
	for tok := range bytes.SplitSeq(v, []byte(",")) {
		if tok = bytes.TrimSpace(tok); len(tok) > 0 {
			out = append(out, bytes.ToLower(tok))
		}
	}
	return out
}

func listed(tokens [][]byte, name []byte) bool {
	for _, t := range tokens {
		if bytes.Equal(t, name) {
			return true
		}
	}
	return false
}

// forApp reports whether a client header (lower-case name) may reach the
// app: never credentials, hop-by-hop or identity headers (the configured
// AuthProxyHeader among them, which a trusted proxy may have sent); then
// the allowlist when one is set.
//
// Map lookups index with string(name) directly, which does not allocate.
func (hp headerPolicy) forApp(name []byte, conn [][]byte, ws bool) bool {
	switch {
	case neverForwarded[string(name)], hopByHop[string(name)], identityName(name), listed(conn, name):
		return false
	case hp.authProxy != "" && string(name) == hp.authProxy:
		return false
	case ws && wsHandshakeHeaders[string(name)]:
		return false
	case hp.allow == nil, bodyHeaders[string(name)]:
		return true
	}
	return hp.allow[string(name)]
}

// identityName reports whether a lower-case header name starts with one of
// identityPrefixes.
func identityName(name []byte) bool {
	for _, p := range identityPrefixes {
		if len(name) >= len(p) && string(name[:len(p)]) == p {
			return true
		}
	}
	return false
}

// copyToApp copies the forwardable client headers of src onto dst.
func (hp headerPolicy) copyToApp(dst, src *fasthttp.RequestHeader) {
	conn := connectionTokens(src)
	var buf [maxHeaderName]byte
	for k, v := range src.All() {
		if hp.forApp(lower(&buf, k), conn, false) {
			dst.AddBytesKV(k, v)
		}
	}
}

// httpHeaderForApp returns the forwardable client headers of src for a
// WebSocket dial.
func (hp headerPolicy) httpHeaderForApp(src *fasthttp.RequestHeader) http.Header {
	conn := connectionTokens(src)
	h := make(http.Header)
	var buf [maxHeaderName]byte
	for k, v := range src.All() {
		if hp.forApp(lower(&buf, k), conn, true) {
			h.Add(string(k), string(v))
		}
	}
	return h
}

// forwarded holds the X-Forwarded-* values sent upstream. Its strings are
// copies.
type forwarded struct {
	xff, proto, host string
}

// maxForwardedFor keeps X-Forwarded-For short enough for every upstream.
const maxForwardedFor = 1000

// forwardedOf computes X-Forwarded-For/Proto/Host for a request whose
// direct peer is peer. A trusted peer's values are kept (and For extended
// by the peer); anyone else's are replaced.
func forwardedOf(req *fasthttp.RequestHeader, peer netip.Addr, tls, trusted bool) forwarded {
	f := forwarded{xff: peer.String(), proto: "http", host: string(req.Host())}
	if tls {
		f.proto = "https"
	}
	if !trusted {
		return f
	}
	if v := req.Peek("X-Forwarded-For"); len(v) > 0 && len(v)+len(f.xff) < maxForwardedFor && printable(v) {
		f.xff = string(v) + ", " + f.xff
	}
	switch v := string(req.Peek("X-Forwarded-Proto")); v {
	case "http", "https":
		f.proto = v
	}
	if v := req.Peek("X-Forwarded-Host"); len(v) > 0 && validHost(v) {
		f.host = string(v)
	}
	return f
}

// setOn sets the X-Forwarded-* headers with set.
func (f forwarded) setOn(set func(k, v string)) {
	set("X-Forwarded-For", f.xff)
	set("X-Forwarded-Proto", f.proto)
	set("X-Forwarded-Host", f.host)
}

// respPolicy says how an upstream response's headers are rewritten.
type respPolicy struct {
	// locationPrefix, when set, is put before absolute-path Location
	// values ("/u/<user>").
	locationPrefix string
	// keepCookies passes Set-Cookie through (the auth API's own cookies).
	keepCookies bool
	// app marks an agent app's response (from the pod or a peer proxy):
	// site-wide headers are dropped and secureAppResponse applies.
	app bool
	// sharedOrigin marks an app served on the platform origin (path
	// routing): origin-wide headers are dropped too.
	sharedOrigin bool
}

// copyResponse copies status and headers of src onto dst: hop-by-hop
// headers and (unless keepCookies) every Set-Cookie are dropped,
// Content-Length is left to the body, an absolute-path Location is moved
// under the user's prefix, and an app's response gets the app rules.
func (rp respPolicy) copyResponse(dst, src *fasthttp.ResponseHeader) {
	dst.SetStatusCode(src.StatusCode())
	var conn [][]byte
	if v := src.Peek("Connection"); len(v) > 0 {
		for tok := range bytes.SplitSeq(v, []byte(",")) {
			conn = append(conn, bytes.ToLower(bytes.TrimSpace(tok)))
		}
	}
	var buf [maxHeaderName]byte
	for k, v := range src.All() {
		name := lower(&buf, k)
		switch {
		case hopByHop[string(name)], string(name) == "content-length", listed(conn, name):
			continue
		case string(name) == "set-cookie" && !rp.keepCookies:
			continue
		case rp.app && dropFromApp(name, rp.sharedOrigin):
			continue
		case string(name) == "location" && rp.locationPrefix != "":
			dst.AddBytesKV(k, rewriteLocation(rp.locationPrefix, v))
			continue
		}
		dst.AddBytesKV(k, v)
	}
	if rp.app {
		secureAppResponse(dst)
	}
}

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

// printable reports whether b holds only printable ASCII and spaces.
func printable(b []byte) bool {
	for _, c := range b {
		if c < ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// validHost reports whether h is a plausible Host header: a host name or
// address with an optional port.
func validHost(h []byte) bool {
	if len(h) == 0 || len(h) > 261 {
		return false
	}
	for _, c := range h {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '-' || c == ':' || c == '[' || c == ']' || c == '_') {
			return false
		}
	}
	return true
}
