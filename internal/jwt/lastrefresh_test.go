package jwt

import (
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestFetcherLastRefreshFollowsSuccessfulFetches(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	ring := NewKeyRing(clock.Now())
	srv := newJWKSServer(t, ring)
	f := newTestFetcher(t, srv, clock, FetcherOptions{})
	if got := f.LastRefresh(); !got.IsZero() {
		t.Fatalf("LastRefresh before any fetch = %v, want zero", got)
	}

	first := clock.Now()
	if err := f.refresh(true); err != nil {
		t.Fatalf("first fetch: %v", err)
	}
	if got := f.LastRefresh(); !got.Equal(first) {
		t.Fatalf("LastRefresh after a fetch = %v, want %v", got, first)
	}

	clock.Advance(time.Minute)
	srv.fail.Store(true)
	if err := f.refresh(true); err == nil {
		t.Fatal("fetch from a failing server succeeded")
	}
	bad := `{"keys":[{"kty":"bogus"}]}`
	srv.fail.Store(false)
	srv.body.Store(&bad)
	if err := f.refresh(true); err == nil {
		t.Fatal("fetch of an unparseable JWKS succeeded")
	}
	if got := f.LastRefresh(); !got.Equal(first) {
		t.Fatalf("LastRefresh after failed fetches = %v, want %v", got, first)
	}

	clock.Advance(time.Minute)
	srv.body.Store(nil)
	if err := f.refresh(true); err != nil {
		t.Fatalf("fetch after recovery: %v", err)
	}
	if got, want := f.LastRefresh(), clock.Now(); !got.Equal(want) {
		t.Fatalf("LastRefresh after recovery = %v, want %v", got, want)
	}
}
