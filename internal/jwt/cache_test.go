package jwt

import (
	"errors"
	"testing"
	"time"
	"unsafe"
)

// keySetVerifier is a verifier, with a cache, over a plain KeySet holding
// the key fx signs with; the test may change the set. It returns the set,
// the signing kid and a token signed with it.
func keySetVerifier(t *testing.T, fx *fixture) (v *Verifier, keys KeySet, kid, tok string) {
	t.Helper()
	tok = signed(t, fx)
	kid = fx.ring.SigningKID(fx.clock.Now())
	pub, err := fx.ring.PublicKey(kid)
	if err != nil {
		t.Fatal(err)
	}
	keys = KeySet{kid: pub}
	v, err = NewVerifier(VerifierOptions{Keys: keys, Issuer: testIssuer, Audience: testAudience, Leeway: testLeeway, Now: fx.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return v, keys, kid, tok
}

// TestCacheHitSkipsCrypto: a repeat of a verified token is answered from
// the cache with no parsing and no signature check, which would allocate:
// only the key is looked up, to see that it still names the same key.
func TestCacheHitSkipsCrypto(t *testing.T) {
	v, _, _, tok := keySetVerifier(t, newFixture(t, 0))
	first, err := v.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() {
		if got, err := v.Verify(tok); err != nil || got != first {
			t.Fatalf("cached Verify = %+v, %v; want %+v", got, err, first)
		}
	}); allocs != 0 {
		t.Errorf("a cache hit allocates %v times: it parsed the token", allocs)
	}
}

// TestCacheHitEndsWithItsKey: a cached token whose kid comes to name
// another key, or whose key leaves the key source (an operator's reset
// after a key leak), is refused at once, not when it expires.
func TestCacheHitEndsWithItsKey(t *testing.T) {
	fx := newFixture(t, 0)
	v, keys, kid, tok := keySetVerifier(t, fx)
	if _, err := v.Verify(tok); err != nil {
		t.Fatal(err)
	}
	pub := keys[kid]
	other := NewKeyRing(fx.clock.Now())
	otherPub, _ := other.PublicKey(other.SigningKID(fx.clock.Now()))
	keys[kid] = otherPub
	if _, err := v.Verify(tok); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("cached token after its kid came to name another key = %v, want ErrBadSignature", err)
	}
	keys[kid] = pub
	if _, err := v.Verify(tok); err != nil {
		t.Fatal(err)
	}
	delete(keys, kid)
	if _, err := v.Verify(tok); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("cached token after its key left = %v, want ErrUnknownKey", err)
	}
}

func TestCacheHitStillExpires(t *testing.T) {
	fx := newFixture(t, 0)
	tok := signed(t, fx)
	if _, err := fx.verifier.Verify(tok); err != nil {
		t.Fatal(err)
	}
	fx.clock.Advance(testLifetime + testLeeway - time.Second)
	if _, err := fx.verifier.Verify(tok); err != nil {
		t.Fatalf("cached token inside leeway: %v", err)
	}
	fx.clock.Advance(time.Second)
	if _, err := fx.verifier.Verify(tok); !errors.Is(err, ErrExpired) {
		t.Fatalf("cached token past expiry: %v, want ErrExpired", err)
	}
	if fx.verifier.cache.Contains(tok) {
		t.Error("expired token still cached")
	}
}

func TestCacheSkipsRejections(t *testing.T) {
	fx := newFixture(t, 0)
	bad := replaceSeg(signed(t, fx), 1, seg(with(goodPayload(fx.clock.Now()), "sub", "mallory")))
	for range 2 {
		if _, err := fx.verifier.Verify(bad); !errors.Is(err, ErrBadSignature) {
			t.Fatalf("tampered token: %v", err)
		}
	}
	if fx.verifier.cache.Len() != 0 {
		t.Errorf("cache holds %d entries after rejections", fx.verifier.cache.Len())
	}
}

func TestCacheDisabled(t *testing.T) {
	fx := newFixture(t, -1)
	tok := signed(t, fx)
	for range 2 {
		if _, err := fx.verifier.Verify(tok); err != nil {
			t.Fatal(err)
		}
	}
	if fx.verifier.cache != nil || fx.keys.Calls() != 2 {
		t.Errorf("disabled cache: %d key lookups, want 2", fx.keys.Calls())
	}
}

// A caller may hand Verify a string aliasing a reused buffer (fasthttp);
// the cache must own its key.
func TestCacheKeyDoesNotAliasCaller(t *testing.T) {
	fx := newFixture(t, 0)
	tok := signed(t, fx)
	buf := []byte(tok)
	if _, err := fx.verifier.Verify(unsafe.String(&buf[0], len(buf))); err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] = 'A'
	}
	if !fx.verifier.cache.Contains(tok) {
		t.Error("the cached token changed with the caller's buffer")
	}
	if _, err := fx.verifier.Verify(tok); err != nil {
		t.Errorf("Verify after buffer reuse: %v", err)
	}
}
