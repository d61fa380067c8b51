package jwt

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// jwksServer serves a ring's JWKS and counts requests. Set fail to answer
// 500, or gate to hold each request until the gate is closed.
type jwksServer struct {
	*httptest.Server
	ring     *KeyRing
	requests atomic.Int32
	fail     atomic.Bool
	body     atomic.Pointer[string] // overrides the JWKS when set
	started  chan struct{}          // receives once per request when non-nil
	gate     chan struct{}
}

func newJWKSServer(t *testing.T, ring *KeyRing) *jwksServer {
	s := &jwksServer{ring: ring}
	s.Server = httptest.NewServer(s)
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	if r.Header.Get("Authorization") != "Bearer node" {
		http.Error(w, "no auth", http.StatusUnauthorized)
		return
	}
	if s.started != nil {
		s.started <- struct{}{}
	}
	if s.gate != nil {
		<-s.gate
	}
	if s.fail.Load() {
		http.Error(w, "down", http.StatusInternalServerError)
		return
	}
	if b := s.body.Load(); b != nil {
		w.Write([]byte(*b))
		return
	}
	data, _ := s.ring.JWKS()
	w.Write(data)
}

// inMemory is a client that hands each request straight to h, with no
// network, so a synctest bubble sees every goroutine it blocks.
func inMemory(h http.Handler) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Result(), nil
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func newTestFetcher(t *testing.T, srv *jwksServer, clock *testkit.Clock, opts FetcherOptions) *JWKSFetcher {
	t.Helper()
	opts.URL = srv.URL
	opts.Client = srv.Client()
	opts.Header = func(h http.Header) { h.Set("Authorization", "Bearer node") }
	if clock != nil {
		opts.Now = clock.Now
	}
	if opts.MinRefreshInterval == 0 {
		opts.MinRefreshInterval = 10 * time.Second
	}
	f, err := NewJWKSFetcher(opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFetcherRefreshesOnUnknownKIDRateLimited(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	ring := NewKeyRing(clock.Now())
	srv := newJWKSServer(t, ring)
	f := newTestFetcher(t, srv, clock, FetcherOptions{})
	if f.Ready() {
		t.Fatal("Ready before any fetch")
	}
	kid1 := ring.signingKey().id
	if _, err := f.PublicKey(kid1); err != nil || !f.Ready() || srv.requests.Load() != 1 {
		t.Fatalf("first lookup: %v, ready %v, %d requests", err, f.Ready(), srv.requests.Load())
	}

	kid2 := ring.Rotate(clock.Now())
	clock.Advance(9 * time.Second)
	for range 5 {
		if _, err := f.PublicKey(kid2); !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("lookup inside MinRefreshInterval: %v, want ErrUnknownKey", err)
		}
	}
	if n := srv.requests.Load(); n != 1 {
		t.Fatalf("%d requests inside MinRefreshInterval, want 1", n)
	}

	clock.Advance(time.Second)
	if _, err := f.PublicKey(kid2); err != nil {
		t.Fatalf("lookup after MinRefreshInterval: %v", err)
	}
	if _, err := f.PublicKey(kid1); err != nil {
		t.Fatalf("old kid after refresh: %v", err)
	}
	for range 5 {
		f.PublicKey("AAAAAAAAAAAAAAAA")
	}
	if n := srv.requests.Load(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestFetcherSharesOneFetch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ring := NewKeyRing(time.Now())
		srv := &jwksServer{ring: ring, started: make(chan struct{}, 1), gate: make(chan struct{})}
		f, err := NewJWKSFetcher(FetcherOptions{
			URL: "http://jwks.test/", Client: inMemory(srv), MinRefreshInterval: 10 * time.Second,
			Header: func(h http.Header) { h.Set("Authorization", "Bearer node") },
		})
		if err != nil {
			t.Fatal(err)
		}

		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range cap(errs) {
			wg.Go(func() {
				_, err := f.PublicKey(ring.signingKey().id)
				errs <- err
			})
		}
		<-srv.started
		synctest.Wait() // every other caller now waits on the fetch under way
		close(srv.gate)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("caller sharing the fetch: %v", err)
			}
		}
		if n := srv.requests.Load(); n != 1 {
			t.Errorf("%d requests for %d concurrent callers, want 1", n, cap(errs))
		}
	})
}

func TestFetcherKeepsKeysOnBadFetch(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	ring := NewKeyRing(clock.Now())
	srv := newJWKSServer(t, ring)
	f := newTestFetcher(t, srv, clock, FetcherOptions{})
	kid := ring.signingKey().id
	if _, err := f.PublicKey(kid); err != nil {
		t.Fatal(err)
	}
	huge := `{"keys":[],"pad":"` + strings.Repeat("x", maxJWKSBytes) + `"}`
	for _, bad := range []func(){
		func() { srv.fail.Store(true) },
		func() { srv.fail.Store(false); s := `{"keys":[]}`; srv.body.Store(&s) },
		func() { srv.body.Store(&huge) },
	} {
		bad()
		clock.Advance(time.Minute)
		_, err := f.PublicKey("AAAAAAAAAAAAAAAA")
		if !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), "refresh") {
			t.Errorf("lookup with failing refresh: %v", err)
		}
		if _, err := f.PublicKey(kid); err != nil {
			t.Errorf("known kid lost after a bad fetch: %v", err)
		}
	}
}

func TestFetcherStartLoadsAndRefreshes(t *testing.T) {
	ring := NewKeyRing(time.Now())
	srv := newJWKSServer(t, ring)
	srv.fail.Store(true)
	f := newTestFetcher(t, srv, nil, FetcherOptions{RefreshInterval: 20 * time.Millisecond, MinRefreshInterval: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Start(ctx) }()

	testkit.Eventually(t, "failed first fetches", func() bool { return srv.requests.Load() >= 2 })
	if f.Ready() {
		t.Fatal("Ready while the server fails")
	}
	srv.fail.Store(false)
	testkit.Eventually(t, "Ready", f.Ready)
	kid := ring.Rotate(time.Now())
	testkit.Eventually(t, "background refresh", func() bool {
		_, ok := f.lookup(kid)
		return ok
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Start returned %v after cancel", err)
	}
}

func TestVerifierWithFetcher(t *testing.T) {
	fx := newFixture(t, 0)
	srv := newJWKSServer(t, fx.ring)
	f := newTestFetcher(t, srv, fx.clock, FetcherOptions{})
	v, err := NewVerifier(VerifierOptions{Keys: f, Issuer: testIssuer, Audience: testAudience, Now: fx.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	old := signed(t, fx)
	if _, err := v.Verify(old); err != nil {
		t.Fatalf("first token: %v", err)
	}
	fx.clock.Advance(time.Minute)
	fx.ring.Rotate(fx.clock.Now())
	fresh := signed(t, fx)
	for name, tok := range map[string]string{"old": old, "fresh": fresh} {
		if _, err := v.Verify(tok); err != nil {
			t.Errorf("%s token after rotation: %v", name, err)
		}
	}
}

// TestFetcherRefetchesWhenAnotherVersionIsPublished: between its periodic
// refreshes the fetcher fetches again when it is told of a JWKS version
// other than the one it holds, and not for its own version or an empty
// one. A rotation's new set keeps the signing key; a reset's shares no kid
// with the old set, and only that counts as replaced (OnReplaced runs).
func TestFetcherRefetchesWhenAnotherVersionIsPublished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ring := NewKeyRing(time.Now())
		srv := &jwksServer{ring: ring}
		var onReplaced atomic.Int32
		f, err := NewJWKSFetcher(FetcherOptions{
			URL: "http://jwks.test/", Client: inMemory(srv), RefreshInterval: time.Hour,
			Header:     func(h http.Header) { h.Set("Authorization", "Bearer node") },
			OnReplaced: func() { onReplaced.Add(1) },
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go f.Start(ctx)
		synctest.Wait()
		if !f.Ready() {
			t.Fatal("not Ready after the first fetch")
		}
		publish := func(doc []byte) {
			t.Helper()
			srv.body.Store(new(string(doc)))
			time.Sleep(defaultMinRefreshInterval) // fake time: the fetches' rate limit has passed
			f.Published(JWKSVersion(doc))
			synctest.Wait()
		}
		jwks := func(r *KeyRing) []byte {
			t.Helper()
			doc, err := r.JWKS()
			if err != nil {
				t.Fatal(err)
			}
			return doc
		}

		publish(jwks(ring))
		f.Published("")
		synctest.Wait()
		if n := srv.requests.Load(); n != 1 {
			t.Fatalf("%d fetches after the loaded version and the empty one were published, want 1", n)
		}

		staged := ring.Rotate(time.Now())
		publish(jwks(ring))
		if _, ok := f.lookup(staged); !ok || srv.requests.Load() != 2 {
			t.Fatalf("after a rotation's version was published: staged key loaded %v, %d fetches, want 2", ok, srv.requests.Load())
		}
		if f.Replaced() != 0 || onReplaced.Load() != 0 {
			t.Fatalf("a rotation counted as a replaced key set (%d, OnReplaced %d times)", f.Replaced(), onReplaced.Load())
		}

		fresh := NewKeyRing(time.Now())
		publish(jwks(fresh))
		if n := srv.requests.Load(); n != 3 {
			t.Fatalf("%d fetches after a reset's version was published, want 3", n)
		}
		if _, ok := f.lookup(fresh.signingKey().id); !ok {
			t.Error("the new key is not loaded")
		}
		if _, ok := f.lookup(ring.signingKey().id); ok {
			t.Error("the replaced key is still loaded")
		}
		if f.Replaced() != 1 || onReplaced.Load() != 1 {
			t.Errorf("after a reset: Replaced %d, OnReplaced ran %d times; want 1 and 1", f.Replaced(), onReplaced.Load())
		}
	})
}
