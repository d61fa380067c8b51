package jwt

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

var sentinels = []error{ErrMalformed, ErrBadSignature, ErrUnknownKey, ErrExpired, ErrClaims}

// foreignKeys are non-Ed25519 keys for algorithm-confusion cases.
var foreignKeys = sync.OnceValues(func() (*rsa.PrivateKey, *ecdsa.PrivateKey) {
	rk, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return rk, ek
})

type verifyCase struct {
	name    string
	token   func(tb testing.TB, fx *fixture) string
	advance time.Duration // clock moves this far after signing
	want    error         // nil: the token verifies
}

func header(kid string) map[string]any {
	return map[string]any{"alg": "EdDSA", "typ": "JWT", "kid": kid}
}

func headerAlg(kid, alg string) map[string]any { return with(header(kid), "alg", alg) }

// ringSigned signs payload with the ring's current key under header h.
func ringSigned(fx *fixture, h, payload map[string]any) string {
	return craft(h, payload, edSigner(fx.ring.signingKey().priv))
}

// payloadCase is a token signed by the ring whose payload is edit(good).
func payloadCase(edit func(map[string]any) map[string]any) func(testing.TB, *fixture) string {
	return func(_ testing.TB, fx *fixture) string {
		return ringSigned(fx, header(fx.ring.signingKey().id), edit(goodPayload(fx.clock.Now())))
	}
}

func hmacSigned(fx *fixture, secret []byte) string {
	return craft(headerAlg(fx.ring.signingKey().id, "HS256"), goodPayload(fx.clock.Now()), func(in []byte) []byte {
		m := hmac.New(sha256.New, secret)
		m.Write(in)
		return m.Sum(nil)
	})
}

// replaceSeg swaps segment i of tok.
func replaceSeg(tok string, i int, s string) string {
	parts := strings.Split(tok, ".")
	parts[i] = s
	return strings.Join(parts, ".")
}

func signed(tb testing.TB, fx *fixture) string { return fx.sign(tb, Claims{User: "alice", Epoch: 3}) }

func verifyCases() []verifyCase {
	pubOf := func(fx *fixture) ed25519.PublicKey { return fx.ring.signingKey().priv.Public().(ed25519.PublicKey) }
	return []verifyCase{
		{name: "valid", token: signed},
		{name: "valid hand built", token: payloadCase(func(p map[string]any) map[string]any { return p })},
		{name: "expired within leeway", token: signed, advance: testLifetime + testLeeway - time.Second},
		{name: "iat ahead within leeway", token: func(tb testing.TB, fx *fixture) string {
			tok, _ := fx.newSigner(tb, testIssuer, testAudience, testLeeway-time.Second).Sign(Claims{User: "alice"})
			return tok
		}},

		{name: "empty", token: func(testing.TB, *fixture) string { return "" }, want: ErrMalformed},
		{name: "too long", token: func(tb testing.TB, fx *fixture) string {
			return signed(tb, fx) + strings.Repeat("A", maxTokenLen)
		}, want: ErrMalformed},
		{name: "two segments", token: func(tb testing.TB, fx *fixture) string {
			t := signed(tb, fx)
			return t[:strings.LastIndex(t, ".")]
		}, want: ErrMalformed},
		{name: "four segments", token: func(tb testing.TB, fx *fixture) string { return signed(tb, fx) + ".e30" }, want: ErrMalformed},
		{name: "header bad base64", token: func(tb testing.TB, fx *fixture) string { return replaceSeg(signed(tb, fx), 0, "eyJ!!!") }, want: ErrMalformed},
		{name: "header padded", token: func(tb testing.TB, fx *fixture) string {
			return replaceSeg(signed(tb, fx), 0, seg(header(fx.ring.signingKey().id))+"==")
		}, want: ErrMalformed},
		{name: "header not json", token: func(tb testing.TB, fx *fixture) string {
			return replaceSeg(signed(tb, fx), 0, b64([]byte("alg=EdDSA")))
		}, want: ErrMalformed},
		{name: "payload not json", token: func(tb testing.TB, fx *fixture) string {
			return replaceSeg(signed(tb, fx), 1, b64([]byte("{")))
		}, want: ErrMalformed},
		{name: "signature non-canonical base64", token: func(tb testing.TB, fx *fixture) string {
			t := []byte(signed(tb, fx))
			const alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
			t[len(t)-1] = alpha[strings.IndexByte(alpha, t[len(t)-1])^1] // flips an unused low bit
			return string(t)
		}, want: ErrMalformed},
		{name: "exp fractional", token: payloadCase(func(p map[string]any) map[string]any {
			return with(p, "exp", float64(p["exp"].(int64))+0.5)
		}), want: ErrMalformed},
		{name: "aud array", token: payloadCase(func(p map[string]any) map[string]any { return with(p, "aud", []string{testAudience}) }), want: ErrMalformed},
		{name: "missing kid", token: func(_ testing.TB, fx *fixture) string {
			return ringSigned(fx, without(header(""), "kid"), goodPayload(fx.clock.Now()))
		}, want: ErrMalformed},
		{name: "kid not a string", token: func(_ testing.TB, fx *fixture) string {
			return ringSigned(fx, with(header(""), "kid", 7), goodPayload(fx.clock.Now()))
		}, want: ErrMalformed},
		{name: "crit header", token: func(_ testing.TB, fx *fixture) string {
			return ringSigned(fx, with(header(fx.ring.signingKey().id), "crit", []string{"b64"}), goodPayload(fx.clock.Now()))
		}, want: ErrMalformed},

		{name: "alg none", token: func(_ testing.TB, fx *fixture) string {
			return craft(headerAlg(fx.ring.signingKey().id, "none"), goodPayload(fx.clock.Now()), nil)
		}, want: ErrBadSignature},
		{name: "alg None keeps signature", token: func(tb testing.TB, fx *fixture) string {
			return replaceSeg(signed(tb, fx), 0, seg(headerAlg(fx.ring.signingKey().id, "None")))
		}, want: ErrBadSignature},
		{name: "alg missing", token: func(_ testing.TB, fx *fixture) string {
			return ringSigned(fx, without(header(fx.ring.signingKey().id), "alg"), goodPayload(fx.clock.Now()))
		}, want: ErrBadSignature},
		{name: "HS256 keyed with public key", token: func(_ testing.TB, fx *fixture) string { return hmacSigned(fx, pubOf(fx)) }, want: ErrBadSignature},
		{name: "HS256 keyed with jwk x", token: func(_ testing.TB, fx *fixture) string { return hmacSigned(fx, []byte(b64(pubOf(fx)))) }, want: ErrBadSignature},
		{name: "RS256", token: func(_ testing.TB, fx *fixture) string {
			rk, _ := foreignKeys()
			return craft(headerAlg(fx.ring.signingKey().id, "RS256"), goodPayload(fx.clock.Now()), func(in []byte) []byte {
				h := sha256.Sum256(in)
				s, _ := rsa.SignPKCS1v15(nil, rk, crypto.SHA256, h[:])
				return s
			})
		}, want: ErrBadSignature},
		{name: "ES256", token: func(_ testing.TB, fx *fixture) string {
			_, ek := foreignKeys()
			return craft(headerAlg(fx.ring.signingKey().id, "ES256"), goodPayload(fx.clock.Now()), func(in []byte) []byte {
				h := sha256.Sum256(in)
				r, s, _ := ecdsa.Sign(rand.Reader, ek, h[:])
				return append(r.FillBytes(make([]byte, 32)), s.FillBytes(make([]byte, 32))...)
			})
		}, want: ErrBadSignature},
		{name: "foreign key same kid", token: func(_ testing.TB, fx *fixture) string {
			_, foreign, _ := ed25519.GenerateKey(nil)
			return craft(header(fx.ring.signingKey().id), goodPayload(fx.clock.Now()), edSigner(foreign))
		}, want: ErrBadSignature},
		{name: "payload changed", token: func(tb testing.TB, fx *fixture) string {
			return replaceSeg(signed(tb, fx), 1, seg(with(goodPayload(fx.clock.Now()), "sub", "mallory")))
		}, want: ErrBadSignature},
		{name: "header changed", token: func(tb testing.TB, fx *fixture) string {
			return replaceSeg(signed(tb, fx), 0, seg(with(header(fx.ring.signingKey().id), "typ", "jwt")))
		}, want: ErrBadSignature},
		{name: "signature bit flipped", token: func(tb testing.TB, fx *fixture) string {
			t := signed(tb, fx)
			sig, _ := base64.RawURLEncoding.DecodeString(t[strings.LastIndex(t, ".")+1:])
			sig[10] ^= 0x20
			return replaceSeg(t, 2, b64(sig))
		}, want: ErrBadSignature},
		{name: "signature truncated", token: func(tb testing.TB, fx *fixture) string {
			t := signed(tb, fx)
			sig, _ := base64.RawURLEncoding.DecodeString(t[strings.LastIndex(t, ".")+1:])
			return replaceSeg(t, 2, b64(sig[:len(sig)-3]))
		}, want: ErrBadSignature},
		{name: "signature empty", token: func(tb testing.TB, fx *fixture) string { return replaceSeg(signed(tb, fx), 2, "") }, want: ErrBadSignature},

		{name: "unknown kid", token: func(_ testing.TB, fx *fixture) string {
			return ringSigned(fx, header("AAAAAAAAAAAAAAAA"), goodPayload(fx.clock.Now()))
		}, want: ErrUnknownKey},
		{name: "kid invalid characters", token: func(_ testing.TB, fx *fixture) string {
			return ringSigned(fx, header("../../etc/passwd"), goodPayload(fx.clock.Now()))
		}, want: ErrUnknownKey},

		{name: "expired", token: signed, advance: testLifetime + testLeeway, want: ErrExpired},
		{name: "expired long ago", token: signed, advance: 48 * time.Hour, want: ErrExpired},

		{name: "wrong issuer", token: func(tb testing.TB, fx *fixture) string {
			tok, _ := fx.newSigner(tb, "https://evil.test", testAudience, 0).Sign(Claims{User: "alice"})
			return tok
		}, want: ErrClaims},
		{name: "wrong audience", token: func(tb testing.TB, fx *fixture) string {
			tok, _ := fx.newSigner(tb, testIssuer, "other-service", 0).Sign(Claims{User: "alice"})
			return tok
		}, want: ErrClaims},
		{name: "wrong audience and expired", token: func(tb testing.TB, fx *fixture) string {
			tok, _ := fx.newSigner(tb, testIssuer, "other-service", 0).Sign(Claims{User: "alice"})
			return tok
		}, advance: time.Hour, want: ErrClaims},
		{name: "iat in the future", token: func(tb testing.TB, fx *fixture) string {
			tok, _ := fx.newSigner(tb, testIssuer, testAudience, testLeeway+time.Second).Sign(Claims{User: "alice"})
			return tok
		}, want: ErrClaims},
		{name: "missing sub", token: payloadCase(func(p map[string]any) map[string]any { return without(p, "sub") }), want: ErrClaims},
		{name: "empty sub", token: payloadCase(func(p map[string]any) map[string]any { return with(p, "sub", "") }), want: ErrClaims},
		{name: "missing sid", token: payloadCase(func(p map[string]any) map[string]any { return without(p, "sid") }), want: ErrClaims},
		{name: "missing exp", token: payloadCase(func(p map[string]any) map[string]any { return without(p, "exp") }), want: ErrClaims},
		{name: "missing iat", token: payloadCase(func(p map[string]any) map[string]any { return without(p, "iat") }), want: ErrClaims},
		{name: "missing auth_time", token: payloadCase(func(p map[string]any) map[string]any { return without(p, "auth_time") }), want: ErrClaims},
		{name: "missing epoch", token: payloadCase(func(p map[string]any) map[string]any { return without(p, "epoch") }), want: ErrClaims},
		{name: "missing iss", token: payloadCase(func(p map[string]any) map[string]any { return without(p, "iss") }), want: ErrClaims},
		{name: "missing aud", token: payloadCase(func(p map[string]any) map[string]any { return without(p, "aud") }), want: ErrClaims},
		{name: "payload null", token: func(_ testing.TB, fx *fixture) string {
			return craft(header(fx.ring.signingKey().id), nil, edSigner(fx.ring.signingKey().priv))
		}, want: ErrClaims},
	}
}

func TestVerify(t *testing.T) {
	for _, tc := range verifyCases() {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, -1)
			tok := tc.token(t, fx)
			fx.clock.Advance(tc.advance)
			got, err := fx.verifier.Verify(tok)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if got.User != "alice" || got.SessionID == "" || got.Expiry.IsZero() {
					t.Errorf("claims = %+v", got)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Verify error = %v, want %v", err, tc.want)
			}
			if n := matchedSentinels(err); n != 1 {
				t.Errorf("error %v matches %d sentinels, want 1", err, n)
			}
			if got != (Claims{}) {
				t.Errorf("rejected token returned claims %+v", got)
			}
			if strings.Contains(err.Error(), tok) && tok != "" {
				t.Errorf("error contains the token")
			}
		})
	}
}

func matchedSentinels(err error) int {
	n := 0
	for _, s := range sentinels {
		if errors.Is(err, s) {
			n++
		}
	}
	return n
}
