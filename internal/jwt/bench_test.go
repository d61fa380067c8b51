package jwt

import (
	"testing"
)

// benchVerifier returns a verifier fed by a static KeySet, as a node proxy
// has after loading the JWKS, and a token to verify.
func benchVerifier(b *testing.B, cacheSize int) (*Verifier, string) {
	fx := newFixture(b, cacheSize)
	data, err := fx.ring.JWKS()
	if err != nil {
		b.Fatal(err)
	}
	keys, err := ParseJWKS(data)
	if err != nil {
		b.Fatal(err)
	}
	v, err := NewVerifier(VerifierOptions{
		Keys: keys, Issuer: testIssuer, Audience: testAudience,
		Leeway: testLeeway, CacheSize: cacheSize, Now: fx.clock.Now,
	})
	if err != nil {
		b.Fatal(err)
	}
	tok := signed(b, fx)
	if _, err := v.Verify(tok); err != nil {
		b.Fatal(err)
	}
	return v, tok
}

func BenchmarkVerify(b *testing.B) {
	for _, bb := range []struct {
		name      string
		cacheSize int
	}{
		{"uncached", -1},
		{"cached", 0},
	} {
		b.Run(bb.name, func(b *testing.B) {
			v, tok := benchVerifier(b, bb.cacheSize)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkVerifyCachedParallel(b *testing.B) {
	v, tok := benchVerifier(b, 0)
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

func BenchmarkSign(b *testing.B) {
	fx := newFixture(b, -1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fx.signer.Sign(Claims{User: "alice", Epoch: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
