package nodeproxy

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/jwt"
)

// TestRetiredKeyGoesThroughRenewal: keys rotate twice while alice is idle,
// and the JWKS drops the key her session was signed with. Her next
// request, WebSocket and event stream are served, renewed by the auth API
// (which still holds the key), without signing in again; the key set is
// refreshed, not fetched per request.
func TestRetiredKeyGoesThroughRenewal(t *testing.T) {
	var h *harness
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := h.ring.JWKS()
		w.Write(data)
	}))
	defer jwks.Close()
	var fetches atomic.Int32
	countingJWKS := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		jwks.Config.Handler.ServeHTTP(w, r)
	}))
	defer countingJWKS.Close()
	var fetcher *jwt.JWKSFetcher
	h = newHarness(t, harnessOpts{modify: func(o *Options) {
		var err error
		fetcher, err = jwt.NewJWKSFetcher(jwt.FetcherOptions{URL: countingJWKS.URL, MinRefreshInterval: 5 * time.Second, Now: o.Now})
		if err != nil {
			t.Fatal(err)
		}
		v, err := jwt.NewVerifier(jwt.VerifierOptions{Keys: fetcher, Issuer: testIssuer, Audience: testAudience, Leeway: time.Second, Now: o.Now})
		if err != nil {
			t.Fatal(err)
		}
		o.Verifier = v
	}})
	h.addUser("alice", "node-a")
	session := cookie(h.session("alice"))
	if resp := h.get("node-a", "/u/alice/", map[string]string{"Cookie": session}); resp.StatusCode != 200 {
		t.Fatalf("before rotation: %d", resp.StatusCode)
	} else {
		readAll(t, resp)
	}

	// Idle past the token's lifetime, through two rotations; the first
	// key leaves the JWKS (the auth API's verifier still holds it).
	h.clock.Advance(2 * testLifetime)
	h.ring.Rotate(h.clock.Now())
	h.ring.Rotate(h.clock.Now())
	if n := h.ring.Prune(h.clock.Now().Add(time.Hour), time.Minute); n != 2 {
		t.Fatalf("pruned %d keys, want 2", n)
	}
	// The proxy's periodic refresh loads the new key set, without the
	// session's key.
	if _, err := fetcher.PublicKey(h.ring.SigningKID(h.clock.Now())); err != nil {
		t.Fatalf("refresh the key set: %v", err)
	}
	h.clock.Advance(time.Minute)
	before := fetches.Load()

	resp := h.get("node-a", "/u/alice/", map[string]string{"Cookie": session})
	body := readAll(t, resp)
	if resp.StatusCode != 200 {
		t.Fatalf("request after rotations: %d %q", resp.StatusCode, body)
	}
	if sc := resp.Header.Get("Set-Cookie"); !strings.HasPrefix(sc, DefaultCookieName+"=") {
		t.Errorf("no renewed cookie after rotations: %q", sc)
	}

	c, wsResp, err := h.dialWS("node-a", "/u/alice/api/ws", http.Header{"Cookie": {session}})
	if err != nil {
		t.Fatalf("WebSocket after rotations: %v", err)
	}
	echoes(t, c, "after rotations")
	c.Close()
	wsResp.Body.Close()

	stream := h.get("node-a", "/u/alice/api/events", map[string]string{"Cookie": session})
	if stream.StatusCode != 200 {
		t.Fatalf("event stream after rotations: %d", stream.StatusCode)
	}
	line, err := bufio.NewReader(stream.Body).ReadString('\n')
	stream.Body.Close()
	if err != nil || line == "" {
		t.Fatalf("event stream after rotations: %q, %v", line, err)
	}

	if n := h.auth.renewals.Load(); n != 1 {
		t.Errorf("%d renewals for one session, want 1 (shared and remembered)", n)
	}
	if n := fetches.Load() - before; n != 1 {
		t.Errorf("%d JWKS fetches after rotations, want 1", n)
	}
}

// TestForeignKeyRefusedAfterRenewal: a token signed by a key neither the
// proxy nor the auth API holds goes to the auth API, which refuses it: 401,
// nothing reaches the app.
func TestForeignKeyRefusedAfterRenewal(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.addUser("alice", "node-a")
	tok := h.sessionSignedBy(h.foreignSigner(), "alice")
	before := len(h.pods["alice"].log.requests())
	resp := h.get("node-a", "/u/alice/", map[string]string{"Cookie": cookie(tok)})
	readAll(t, resp)
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("token of a foreign key: %d, Set-Cookie %q; want 401 and none", resp.StatusCode, resp.Header.Get("Set-Cookie"))
	}
	if n := h.auth.renewals.Load(); n != 1 {
		t.Errorf("%d renewals asked, want 1 (the auth API decides)", n)
	}
	if after := len(h.pods["alice"].log.requests()); after != before {
		t.Errorf("the app saw %d requests for a foreign key's token", after-before)
	}
}

// TestUnknownKeyRenewalsThrottledPerClient: tokens of keys nobody holds
// each cost a renewal call, so a client whose renewals keep being refused
// is stopped after a burst (429, no call), while another client is still
// sent on, and the block drains with time.
func TestUnknownKeyRenewalsThrottledPerClient(t *testing.T) {
	h := newHarness(t, harnessOpts{modify: func(o *Options) { o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")} }})
	h.addUser("alice", "node-a")
	foreign := h.foreignSigner()
	forged := func(from string) *http.Response {
		resp := h.get("node-a", "/u/alice/", map[string]string{"Cookie": cookie(h.sessionSignedBy(foreign, "alice")), "X-Forwarded-For": from})
		readAll(t, resp)
		return resp
	}
	const attacker, other = "203.0.113.1", "203.0.113.2"
	for i := range refusalBurst {
		if resp := forged(attacker); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("forged token %d: %d, want 401", i, resp.StatusCode)
		}
	}
	if resp := forged(attacker); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("after %d refused renewals: %d (Retry-After %q), want 429 with Retry-After", refusalBurst, resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if n := h.auth.renewals.Load(); n != refusalBurst {
		t.Errorf("%d renewal calls, want %d: a blocked client must cost none", n, refusalBurst)
	}
	if resp := forged(other); resp.StatusCode != http.StatusUnauthorized || h.auth.renewals.Load() != refusalBurst+1 {
		t.Errorf("another client: %d after %d renewal calls, want 401 after its own call", resp.StatusCode, h.auth.renewals.Load())
	}
	h.clock.Advance(refusalEvery)
	if resp := forged(attacker); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("after %v: %d, want 401 (sent on again)", refusalEvery, resp.StatusCode)
	}
}
