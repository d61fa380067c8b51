package jwt

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

const (
	testIssuer   = "https://auth.sandgate.test"
	testAudience = "sandgate-node"
	testLeeway   = 5 * time.Second
	testLifetime = 10 * time.Minute
)

// ringSource is a KeySource that always reflects the ring's current keys and
// counts lookups, so tests can tell whether Verify did crypto.
type ringSource struct {
	ring  *KeyRing
	mu    sync.Mutex
	calls int
}

func (s *ringSource) PublicKey(kid string) (ed25519.PublicKey, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	for _, k := range s.ring.snapshot() {
		if k.id == kid {
			return k.priv.Public().(ed25519.PublicKey), nil
		}
	}
	return KeySet{}.PublicKey(kid)
}

func (s *ringSource) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// fixture is a ring with a signer and a verifier that share one clock.
type fixture struct {
	clock    *testkit.Clock
	ring     *KeyRing
	keys     *ringSource
	signer   *Signer
	verifier *Verifier
}

func newFixture(tb testing.TB, cacheSize int) *fixture {
	tb.Helper()
	fx := &fixture{clock: testkit.NewClock(testkit.Epoch)}
	fx.ring = NewKeyRing(fx.clock.Now())
	fx.keys = &ringSource{ring: fx.ring}
	fx.signer = fx.newSigner(tb, testIssuer, testAudience, 0)
	v, err := NewVerifier(VerifierOptions{
		Keys: fx.keys, Issuer: testIssuer, Audience: testAudience,
		Leeway: testLeeway, CacheSize: cacheSize, Now: fx.clock.Now,
	})
	if err != nil {
		tb.Fatal(err)
	}
	fx.verifier = v
	return fx
}

// newSigner returns a signer on the fixture's ring whose clock runs skew
// ahead of the fixture clock.
func (fx *fixture) newSigner(tb testing.TB, iss, aud string, skew time.Duration) *Signer {
	tb.Helper()
	s, err := NewSigner(SignerOptions{
		KeyRing: fx.ring, Issuer: iss, Audience: aud, Lifetime: testLifetime,
		Now: func() time.Time { return fx.clock.Now().Add(skew) },
	})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func (fx *fixture) sign(tb testing.TB, c Claims) string {
	tb.Helper()
	tok, err := fx.signer.Sign(c)
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}

// b64 is the JWS segment encoding.
func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// seg JSON-encodes v as a JWS segment.
func seg(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b64(b)
}

// craft builds header.payload.signature, signing the first two segments
// with sign (nil leaves the signature empty).
func craft(header, payload any, sign func(input []byte) []byte) string {
	input := seg(header) + "." + seg(payload)
	var sig []byte
	if sign != nil {
		sig = sign([]byte(input))
	}
	return input + "." + b64(sig)
}

// edSigner signs with an Ed25519 key.
func edSigner(priv ed25519.PrivateKey) func([]byte) []byte {
	return func(in []byte) []byte { return ed25519.Sign(priv, in) }
}

// goodPayload is a complete, current payload as our Signer would write it.
func goodPayload(now time.Time) map[string]any {
	return map[string]any{
		"iss": testIssuer, "aud": testAudience, "sub": "alice",
		"iat": now.Unix(), "exp": now.Add(testLifetime).Unix(),
		"sid": "c2Vzc2lvbi1pZC0xMjM0NQ", "auth_time": now.Unix(), "epoch": 3,
	}
}

// without returns a copy of m minus key.
func without(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// with returns a copy of m with key set to v.
func with(m map[string]any, key string, v any) map[string]any {
	out := without(m, key)
	out[key] = v
	return out
}

// signingKey is the key that signs at the current wall-clock time; test
// clocks start in the past, so it is the newest active key.
func (r *KeyRing) signingKey() ringKey { return r.signingKeyAt(time.Now()) }
