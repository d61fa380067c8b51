package nodeproxy

import (
	"net/netip"

	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/clientaddr"
)

// clientOf names the client of a request from peer with the rule the auth
// API uses (clientaddr): X-Forwarded-For walked from the right past
// TrustedProxies, and past another node's proxy on a hop (trusted).
func clientOf(h *fasthttp.RequestHeader, peer netip.Addr, trusted func(netip.Addr) bool) netip.Addr {
	var xff []string
	for _, v := range h.PeekAll("X-Forwarded-For") {
		xff = append(xff, string(v))
	}
	return clientaddr.Walk(peer, xff, trusted)
}

// forwarded holds the X-Forwarded-* values sent upstream. Its strings are
// copies.
type forwarded struct {
	xff, proto, host string
}

// maxForwardedFor keeps X-Forwarded-For short enough for every upstream.
const maxForwardedFor = 1000

// forwardedOf computes X-Forwarded-For/Proto/Host for a request to host
// whose direct peer is peer. A trusted peer's values are kept (and For extended
// by the peer); anyone else's are replaced.
func forwardedOf(req *fasthttp.RequestHeader, host string, peer netip.Addr, tls, trusted bool) forwarded {
	f := forwarded{xff: peer.String(), proto: "http", host: host}
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
