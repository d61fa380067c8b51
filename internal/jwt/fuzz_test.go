package jwt

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// FuzzVerify checks that no input panics, every rejection wraps exactly one
// sentinel, and nothing verifies (with or without the expiry check) except
// tokens the ring really signed.
func FuzzVerify(f *testing.F) {
	fx := newFixture(f, 0)
	legit := map[string]bool{}
	for _, tc := range verifyCases() {
		tok := tc.token(f, fx)
		f.Add(tok)
		if _, err := fx.verifier.Verify(tok); err == nil {
			legit[tok] = true
		}
	}
	if len(legit) < 3 {
		f.Fatalf("only %d seeds verify", len(legit))
	}
	f.Fuzz(func(t *testing.T, tok string) {
		if _, err := fx.verifier.VerifyIgnoringExpiry(tok); err == nil && !ringSignedExactly(fx.ring, tok) {
			t.Fatalf("VerifyIgnoringExpiry accepted a token the ring never signed: %q", tok)
		} else if err != nil && matchedSentinels(err) != 1 {
			t.Fatalf("VerifyIgnoringExpiry error %v matches %d sentinels", err, matchedSentinels(err))
		}
		c, err := fx.verifier.Verify(tok)
		if err != nil {
			if n := matchedSentinels(err); n != 1 {
				t.Fatalf("error %v matches %d sentinels", err, n)
			}
			if c != (Claims{}) {
				t.Fatalf("rejection returned claims %+v", c)
			}
			return
		}
		if !legit[tok] {
			t.Fatalf("verified a token the ring never signed: %q", tok)
		}
		if !ringSignedExactly(fx.ring, tok) {
			t.Fatalf("verified token fails an independent signature check: %q", tok)
		}
	})
}

// ringSignedExactly re-checks a token's signature without gojwt.
func ringSignedExactly(ring *KeyRing, tok string) bool {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return false
	}
	hb, err := base64.RawURLEncoding.Strict().DecodeString(parts[0])
	if err != nil {
		return false
	}
	var h struct{ Alg, Kid string }
	if json.Unmarshal(hb, &h) != nil || h.Alg != "EdDSA" {
		return false
	}
	sig, err := base64.RawURLEncoding.Strict().DecodeString(parts[2])
	if err != nil {
		return false
	}
	for _, k := range ring.snapshot() {
		if k.id == h.Kid {
			return ed25519.Verify(k.priv.Public().(ed25519.PublicKey), []byte(parts[0]+"."+parts[1]), sig)
		}
	}
	return false
}

// FuzzParseJWKS checks that no input panics and every accepted set holds
// only well-formed Ed25519 keys.
func FuzzParseJWKS(f *testing.F) {
	for _, tc := range jwksCases() {
		f.Add([]byte(tc.in))
	}
	data, err := NewKeyRing(testkit.Epoch).JWKS()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Fuzz(func(t *testing.T, in []byte) {
		set, err := ParseJWKS(in)
		if err != nil {
			if set != nil {
				t.Fatal("error returned with a key set")
			}
			return
		}
		if len(set) == 0 || len(set) > maxJWKSKeys {
			t.Fatalf("accepted a set of %d keys", len(set))
		}
		for kid, k := range set {
			if !validKID(kid) || len(k) != ed25519.PublicKeySize {
				t.Fatalf("accepted kid %q with a %d-byte key", kid, len(k))
			}
		}
	})
}
