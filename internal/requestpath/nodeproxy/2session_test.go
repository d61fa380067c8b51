package nodeproxy

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/jwt"
)

// TestOtherUsersPathRefused: alice's session or bearer token on bob's
// path is refused, and bob's app sees nothing at all.
func TestOtherUsersPathRefused(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.addUser("alice", "node-a")
	bob := h.addUser("bob", "node-a")
	for name, hdr := range map[string]map[string]string{
		"cookie": {"Cookie": cookie(h.session("alice"))},
		"bearer": {"Authorization": "Bearer tok-alice"},
	} {
		t.Run(name, func(t *testing.T) {
			resp := h.get("node-a", "/u/bob/api/echo", hdr)
			readAll(t, resp)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("status %d, want 401", resp.StatusCode)
			}
		})
	}
	if got := bob.log.requests(); len(got) != 0 {
		t.Errorf("bob's app received %v", got)
	}
}

// TestCachesNotSyncedAskForRetry: a proxy serving before its caches
// listed the claims (SYNC_TIMEOUT passed) cannot tell a missing account
// from one it has not seen: a valid session or a bearer token is answered
// 503 with Retry-After, never a 401 that sends the user to sign in again.
// Another user's cookie and no credential are still refused.
func TestCachesNotSyncedAskForRetry(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.addUser("alice", "node-a")
	bob := h.addUser("bob", "node-a")
	h.dir.mu.Lock()
	h.dir.missing = informer.ErrNotSynced
	h.dir.mu.Unlock()
	h.dir.remove("bob")
	for _, tc := range []struct {
		name  string
		hdr   map[string]string
		want  int
		retry bool
	}{
		{"bob's cookie", map[string]string{"Cookie": cookie(h.session("bob"))}, http.StatusServiceUnavailable, true},
		{"bob's bearer token", map[string]string{"Authorization": "Bearer tok-bob"}, http.StatusServiceUnavailable, true},
		{"alice's cookie", map[string]string{"Cookie": cookie(h.session("alice"))}, http.StatusUnauthorized, false},
		{"no credential", nil, http.StatusUnauthorized, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := h.get("node-a", "/u/bob/api/echo", tc.hdr)
			readAll(t, resp)
			if resp.StatusCode != tc.want || (resp.Header.Get("Retry-After") != "") != tc.retry {
				t.Errorf("status %d, Retry-After %q; want %d, Retry-After set %v", resp.StatusCode, resp.Header.Get("Retry-After"), tc.want, tc.retry)
			}
			if sc := resp.Header.Get("Set-Cookie"); sc != "" {
				t.Errorf("Set-Cookie %q on a refused request", sc)
			}
		})
	}
	if got := bob.log.requests(); len(got) != 0 {
		t.Errorf("bob's app received %v", got)
	}
}

// TestTraversalNeverReachesOtherUser sends alice's credentials along every
// traversal spelling towards bob: none reaches bob's app.
func TestTraversalNeverReachesOtherUser(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	alice := h.addUser("alice", "node-a")
	bob := h.addUser("bob", "node-a")
	auth := "Cookie: " + cookie(h.session("alice")) + "\r\n"
	for _, target := range []string{
		"/u/alice/../bob/api/echo", "/u/alice/%2e%2e/bob/api/echo", "/u/alice/%2E%2E/bob/api/echo",
		"/u/alice%2f..%2fbob/api/echo", "/u/alice/..%2fbob/api/echo", "/u/alice/..%5cbob/api/echo",
		"/u/alice//bob/api/echo", "/u//bob/api/echo", "/u/alice\\..\\bob/api/echo", "/u/alice/..;/bob/api/echo",
		"/u/alice/./../bob/api/echo", "/u/alice/.%2e/bob/api/echo",
	} {
		status := h.rawRequest("node-a", "GET "+target+" HTTP/1.1\r\nHost: "+testHost+"\r\n"+auth+"Connection: close\r\n\r\n")
		if !strings.Contains(status, " 400 ") && !strings.Contains(status, " 404 ") {
			t.Errorf("GET %s: %q, want 400 or 404", target, status)
		}
	}
	if got := bob.log.requests(); len(got) != 0 {
		t.Errorf("bob's app received %v", got)
	}
	if got := alice.log.requests(); len(got) != 0 {
		t.Errorf("alice's app received %v", got)
	}
}

func TestRedirectToTrailingSlash(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for method, want := range map[string]int{http.MethodGet: 301, http.MethodHead: 301, http.MethodPost: 308} {
		resp := h.do(method, "node-a", "/u/alice?x=1", nil, nil)
		readAll(t, resp)
		if resp.StatusCode != want || resp.Header.Get("Location") != "/u/alice/?x=1" {
			t.Errorf("%s: %d %q, want %d /u/alice/?x=1", method, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
}

func TestAuthRules(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.addUser("alice", "node-a")
	good := h.session("alice")
	otherKey := func() string {
		ring := jwt.NewKeyRing(time.Now())
		s, _ := jwt.NewSigner(jwt.SignerOptions{KeyRing: ring, Issuer: testIssuer, Audience: testAudience})
		tok, _ := s.Sign(jwt.Claims{User: "alice", SessionID: h.sessionID("alice"), Epoch: 1})
		return tok
	}()
	stale, _ := h.signer.Sign(jwt.Claims{User: "alice", SessionID: h.sessionID("alice"), Epoch: 0})
	tests := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"session cookie", map[string]string{"Cookie": cookie(good)}, 200},
		{"bearer token", map[string]string{"Authorization": "Bearer tok-alice"}, 200},
		{"stale cookie next to a good one", map[string]string{"Cookie": cookie("x.y.z") + "; " + cookie(good)}, 200},
		{"nothing", nil, 401},
		{"garbage cookie", map[string]string{"Cookie": cookie("not-a-jwt")}, 401},
		{"foreign signing key", map[string]string{"Cookie": cookie(otherKey)}, 401},
		{"revoked by epoch", map[string]string{"Cookie": cookie(stale)}, 401},
		{"wrong bearer", map[string]string{"Authorization": "Bearer tok-bob"}, 401},
		{"bearer wins over cookie", map[string]string{"Authorization": "Bearer nope", "Cookie": cookie(good)}, 401},
		{"cookie under another name", map[string]string{"Cookie": "session=" + good}, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := h.get("node-a", "/u/alice/api/echo", tt.hdr)
			readAll(t, resp)
			if resp.StatusCode != tt.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
	// Revocation through the claim: the session's id is listed.
	h.dir.edit("alice", func(e *informer.Entry) { e.Account.Epoch = 2 })
	resp := h.get("node-a", "/u/alice/api/echo", map[string]string{"Cookie": cookie(good)})
	readAll(t, resp)
	if resp.StatusCode != 401 {
		t.Errorf("after the epoch moved on: %d, want 401", resp.StatusCode)
	}
	// Deleting the account ends bearer access too.
	h.dir.mu.Lock()
	delete(h.dir.entries, "alice")
	h.dir.mu.Unlock()
	resp = h.get("node-a", "/u/alice/api/echo", map[string]string{"Authorization": "Bearer tok-alice"})
	readAll(t, resp)
	if resp.StatusCode != 401 {
		t.Errorf("deleted account: %d, want 401", resp.StatusCode)
	}
}

// TestRenewal: a token past half its life is renewed on the response; an
// expired one inside the session is renewed before serving; the auth API
// refusing ends an expired session but not a still-valid token.
func TestRenewal(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.addUser("alice", "node-a")
	tok := h.session("alice")

	fresh := h.get("node-a", "/u/alice/api/echo", map[string]string{"Cookie": cookie(tok)})
	readAll(t, fresh)
	if fresh.Header.Get("Set-Cookie") != "" || h.auth.renewals.Load() != 0 {
		t.Fatalf("a fresh token was renewed")
	}

	h.clock.Advance(testLifetime/2 + time.Second)
	resp := h.get("node-a", "/u/alice/api/echo", map[string]string{"Cookie": cookie(tok)})
	readAll(t, resp)
	renewed := sessionFromSetCookie(t, resp)
	if resp.StatusCode != 200 || renewed == "" || renewed == tok {
		t.Fatalf("half-spent token: status %d, renewed %v", resp.StatusCode, renewed != "")
	}
	c, err := h.ver.Verify(renewed)
	if err != nil || c.User != "alice" {
		t.Fatalf("renewed token: %+v, %v", c, err)
	}

	h.clock.Advance(testLifetime)
	resp = h.get("node-a", "/u/alice/api/echo", map[string]string{"Cookie": cookie(renewed)})
	readAll(t, resp)
	if resp.StatusCode != 200 || sessionFromSetCookie(t, resp) == "" {
		t.Fatalf("expired token inside the session: status %d", resp.StatusCode)
	}

	h.auth.refuse.Store(true)
	h.clock.Advance(2 * testLifetime)
	resp = h.get("node-a", "/u/alice/api/echo", map[string]string{"Cookie": cookie(renewed)})
	readAll(t, resp)
	if resp.StatusCode != 401 {
		t.Errorf("expired token the auth API will not renew: %d, want 401", resp.StatusCode)
	}
	again := h.session("alice")
	h.clock.Advance(testLifetime/2 + time.Second)
	resp = h.get("node-a", "/u/alice/api/echo", map[string]string{"Cookie": cookie(again)})
	readAll(t, resp)
	if resp.StatusCode != 200 || resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("valid token with renewal refused: %d %q, want 200 without a cookie", resp.StatusCode, resp.Header.Get("Set-Cookie"))
	}

	// Past the session's maximum age nothing is renewed.
	h.auth.refuse.Store(false)
	old := h.session("alice")
	h.clock.Advance(DefaultCookieMaxAge + time.Hour)
	before := h.auth.renewals.Load()
	resp = h.get("node-a", "/u/alice/api/echo", map[string]string{"Cookie": cookie(old)})
	readAll(t, resp)
	if resp.StatusCode != 401 || h.auth.renewals.Load() != before {
		t.Errorf("session past its maximum age: %d after %d renewal calls", resp.StatusCode, h.auth.renewals.Load()-before)
	}
}

// sessionFromSetCookie returns the session token a response sets.
func sessionFromSetCookie(t *testing.T, resp *http.Response) string {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == DefaultCookieName {
			if !c.HttpOnly || c.Path != "/" {
				t.Errorf("session cookie attributes: %+v", c)
			}
			return c.Value
		}
	}
	return ""
}
