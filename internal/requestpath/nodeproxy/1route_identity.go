package nodeproxy

import (
	"bytes"
	"crypto/subtle"
	"encoding/base64"
	"net/netip"

	"github.com/valyala/fasthttp"
)

// MinAuthProxySecretBytes is the shortest SSO proxy secret accepted.
const MinAuthProxySecretBytes = 32

var basicScheme = []byte("basic")

// parseBasic decodes an Authorization value of the Basic scheme (RFC
// 7617) into its user-pass, strictly: the scheme in any case, one space,
// then padded standard base64 and nothing else.
func parseBasic(v []byte) ([]byte, bool) {
	if len(v) < len(basicScheme)+2 || !bytes.EqualFold(v[:len(basicScheme)], basicScheme) || v[len(basicScheme)] != ' ' {
		return nil, false
	}
	enc := v[len(basicScheme)+1:]
	// The decoder skips line breaks: refuse them here.
	if len(enc) > maxCredentialLen || bytes.ContainsAny(enc, "\r\n") {
		return nil, false
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(enc)))
	n, err := base64.StdEncoding.Strict().Decode(out, enc)
	if err != nil {
		return nil, false
	}
	return out[:n], true
}

// provesUser reports whether a Basic user-pass is exactly user, a colon
// and secret; the secret is compared in constant time.
func provesUser(userPass, user, secret []byte) bool {
	pass, ok := bytes.CutPrefix(userPass, user)
	return ok && len(user) > 0 && len(pass) > 0 && pass[0] == ':' &&
		subtle.ConstantTimeCompare(pass[1:], secret) == 1
}

// identityProven reports whether the request's AuthProxyHeader is the SSO
// proxy's to keep. With AuthProxySecret: one header and one Authorization
// whose Basic user is its value and whose password is the secret,
// whatever the peer's address. Without: a peer in TrustedProxies.
func (g *guard) identityProven(h *fasthttp.RequestHeader, peer netip.Addr) bool {
	if g.authProxySecret == nil {
		return g.net.proxy(peer)
	}
	users := h.PeekAll(g.authProxyHeader)
	if len(users) != 1 {
		return false
	}
	user := users[0] // PeekAll reuses the slice it returns
	auths := h.PeekAll("Authorization")
	if len(auths) != 1 {
		return false
	}
	userPass, ok := parseBasic(auths[0])
	return ok && provesUser(userPass, user, g.authProxySecret)
}

// checkIdentity keeps the request's identity headers only when
// identityProven, and with AuthProxySecret removes the proof: every
// Authorization but a bearer token (a session, as hops carry), so no
// upstream sees the secret.
func (g *guard) checkIdentity(h *fasthttp.RequestHeader, peer netip.Addr) bool {
	proven := g.identityProven(h, peer)
	if g.authProxySecret != nil {
		if _, bearer := parseBearer(h.Peek("Authorization")); !bearer || len(h.PeekAll("Authorization")) != 1 {
			h.Del("Authorization")
		}
	}
	if !proven {
		g.stripIdentity(h)
	}
	return proven
}

// stripIdentity removes the configured AuthProxyHeader, whatever its
// name, from a request whose identity is not proven (checkIdentity), so no
// stage and no upstream (the auth API above all) sees a user a client
// asserted. Names under
// identityPrefixes are dropped where headers are copied upstream.
func (g *guard) stripIdentity(h *fasthttp.RequestHeader) {
	if g.authProxyHeader != "" {
		h.Del(g.authProxyHeader)
	}
}
