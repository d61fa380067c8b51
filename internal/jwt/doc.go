// Package jwt signs and verifies sandgate's browser session tokens.
//
// A session token is a compact JWS signed with Ed25519 (alg EdDSA) whose
// header names the signing key by kid. The auth API holds a KeyRing of
// private keys, signs with its newest key through a Signer and serves the
// public half as a JWKS. Every node proxy verifies tokens offline with a
// Verifier, fed by a JWKSFetcher (or a static KeySet in tests and tools),
// and caches verified tokens so that repeat requests cost no cryptography.
//
// The package decides only whether a token is authentic and current. Session
// policy stays with callers: they compare Claims.Epoch with the user's
// current epoch to honour revocation, and Claims.AuthTime with the cookie's
// maximum age to decide whether a token may be renewed.
package jwt
