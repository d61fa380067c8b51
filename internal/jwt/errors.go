package jwt

import "errors"

// Verification outcomes. Verify wraps exactly one of them, so callers map a
// rejection to a reason with errors.Is. The wrapped cause is safe to log: it
// never contains the token.
var (
	// ErrMalformed reports a token that is not a well-formed JWS of our shape:
	// too long, wrong segment count, bad base64 or JSON, missing kid.
	ErrMalformed = errors.New("jwt: malformed token")
	// ErrBadSignature reports a token whose algorithm is not EdDSA or whose
	// signature does not verify under the key its kid names.
	ErrBadSignature = errors.New("jwt: bad signature")
	// ErrUnknownKey reports a token whose kid is not in the key source, even
	// after the source refreshed.
	ErrUnknownKey = errors.New("jwt: unknown signing key")
	// ErrExpired reports an authentic token past its exp (plus leeway).
	ErrExpired = errors.New("jwt: token expired")
	// ErrClaims reports an authentic token with a wrong iss or aud, an iat in
	// the future, or a missing required claim.
	ErrClaims = errors.New("jwt: invalid claims")
)
