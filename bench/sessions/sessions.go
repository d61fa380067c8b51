// Package sessions benchmarks the per-request session checks: verifying a
// JWT session cookie without and with the verifier's cache (as the node
// proxy does on every request), and checking a bearer token against the
// claim's SHA-256 annotation (account.Account.TokenMatches, as the node
// proxy and the auth API's login do); and signing a session token, as the
// auth API does for every new or renewed session. The functions are go test
// benchmarks; sessions_test.go exposes them to `go test -bench`.
package sessions

import (
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/jwt"
)

// verifier returns a verifier over a published key set (cacheSize as
// jwt.VerifierOptions.CacheSize: -1 disables the cache) and a token.
func verifier(b *testing.B, cacheSize int) (*jwt.Verifier, string) {
	b.Helper()
	ring := jwt.NewKeyRing(time.Now().Add(-time.Minute))
	s := signer(b, ring)
	data, err := ring.JWKS()
	if err != nil {
		b.Fatal(err)
	}
	keys, err := jwt.ParseJWKS(data)
	if err != nil {
		b.Fatal(err)
	}
	v, err := jwt.NewVerifier(jwt.VerifierOptions{Keys: keys, Issuer: "bench", Audience: "sandgate", CacheSize: cacheSize})
	if err != nil {
		b.Fatal(err)
	}
	tok, err := s.Sign(jwt.Claims{User: "alice", Epoch: 1})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := v.Verify(tok); err != nil {
		b.Fatal(err)
	}
	return v, tok
}

// signer returns a signer on ring with the auth API's session lifetime.
func signer(b *testing.B, ring *jwt.KeyRing) *jwt.Signer {
	b.Helper()
	s, err := jwt.NewSigner(jwt.SignerOptions{KeyRing: ring, Issuer: "bench", Audience: "sandgate", Lifetime: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// verify benchmarks Verify of one token with cacheSize.
func verify(b *testing.B, cacheSize int) {
	v, tok := verifier(b, cacheSize)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(tok); err != nil {
			b.Fatal(err)
		}
	}
}

// VerifyUncached verifies a session token with the cache disabled: an
// Ed25519 signature check and claim validation every time.
func VerifyUncached(b *testing.B) { verify(b, -1) }

// VerifyCached verifies a token the verifier has seen, as on every
// request of a session after its first.
func VerifyCached(b *testing.B) { verify(b, 0) }

// VerifyCachedParallel is VerifyCached from GOMAXPROCS goroutines at
// once, as a node proxy serving many sessions checks them.
func VerifyCachedParallel(b *testing.B) {
	v, tok := verifier(b, 0)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := v.Verify(tok); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// Sign signs a session token for a new session.
func Sign(b *testing.B) {
	s := signer(b, jwt.NewKeyRing(time.Now().Add(-time.Minute)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Sign(jwt.Claims{User: "alice", Epoch: 1}); err != nil {
			b.Fatal(err)
		}
	}
}

// BearerCheck compares a presented bearer token with an account's stored
// SHA-256 in constant time.
func BearerCheck(b *testing.B) {
	const token = "bench-bearer-token-0123456789abcdefghijklmnopqrstuvwxyz"
	a := account.Account{User: "alice", TokenHash: account.HashToken(token)}
	b.ReportAllocs()
	for b.Loop() {
		if !a.TokenMatches(token) {
			b.Fatal("token does not match")
		}
	}
}
