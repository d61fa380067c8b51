package account

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

// ssoHashedPrefix starts every user name derived from a hash of an SSO
// identity. A header value that is itself a user name with this prefix is
// hashed too, so a provider can never assert a name that another
// identity's hash owns.
const ssoHashedPrefix = "sso-"

// maxSSOIdentity bounds an SSO identity: OpenID Connect subjects are at most
// 255 ASCII characters.
const maxSSOIdentity = 255

// ssoHashBytes of SHA-256 name an identity: 120 bits, 24 base32 characters.
const ssoHashBytes = 15

var ssoEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// SSOUserName maps the identity an SSO proxy asserts in AUTH_PROXY_HEADER
// to a sandgate user name, and reports whether the value is usable. The
// map is a pure function of the value, so an account follows the value and
// nothing else: behind oauth2-proxy's OIDC provider the value is the
// provider's immutable subject (X-Forwarded-User is the "sub" claim), and
// a change of the user's login or e-mail at the provider keeps the account.
//
// A value that is a user name ignoring case (a GitHub login) is that name
// in lower case, as GitHub logins are case-insensitive; any other value
// (a numeric or UUID subject, a reserved name, one longer than a user name
// may be) is "sso-" and 24 base32 characters of its SHA-256, taken over the
// exact bytes, case and all. Empty values, values longer than 255 bytes and
// values with bytes outside printable ASCII are refused.
func SSOUserName(value string) (string, bool) {
	v := strings.TrimSpace(value)
	if v == "" || len(v) > maxSSOIdentity {
		return "", false
	}
	for i := range len(v) {
		if v[i] < 0x21 || v[i] > 0x7e {
			return "", false
		}
	}
	if name := strings.ToLower(v); ValidateUser(name) == nil && !strings.HasPrefix(name, ssoHashedPrefix) {
		return name, true
	}
	sum := sha256.Sum256([]byte(v))
	return ssoHashedPrefix + ssoEncoding.EncodeToString(sum[:ssoHashBytes]), true
}
