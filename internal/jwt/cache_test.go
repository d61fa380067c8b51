package jwt

import (
	"errors"
	"testing"
	"time"
	"unsafe"
)

func TestCacheHitSkipsCrypto(t *testing.T) {
	fx := newFixture(t, 0)
	tok := signed(t, fx)
	first, err := fx.verifier.Verify(tok)
	if err != nil {
		t.Fatal(err)
	}
	calls := fx.keys.Calls()
	for range 3 {
		got, err := fx.verifier.Verify(tok)
		if err != nil || got != first {
			t.Fatalf("cached Verify = %+v, %v; want %+v", got, err, first)
		}
	}
	if n := fx.keys.Calls() - calls; n != 0 {
		t.Errorf("cache hits looked up %d keys, want 0", n)
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
	calls := fx.keys.Calls()
	if _, err := fx.verifier.Verify(tok); err != nil || fx.keys.Calls() != calls {
		t.Errorf("Verify after buffer reuse: %v, %d key lookups; want a cache hit", err, fx.keys.Calls()-calls)
	}
}
