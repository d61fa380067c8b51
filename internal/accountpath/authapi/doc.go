// Package authapi is sandgate's central auth API: accounts kept as
// SandboxClaims, browser sessions as short-lived EdDSA JWTs that node proxies
// verify offline, and the landing page.
//
// A signup runs signup -> claim -> session: the request is rate limited
// before its body is read, checked (size, invite, user name), the user's
// SandboxClaim is created with the SHA-256 of a fresh bearer token, and a
// session cookie is minted once the claim is Ready or WAKE_TIMEOUT passes.
// No session state is stored: revocation lives on the claim (a session epoch
// and a short list of revoked session ids) where every node proxy's claim
// informer sees it, and renewal of an expired token is granted only while
// the session's maximum age lasts and the claim does not revoke it. Signing
// keys live in one Secret shared by all replicas, rotated with optimistic
// concurrency and published in the JWKS before they sign.
package authapi
