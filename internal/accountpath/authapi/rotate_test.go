package authapi

import (
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestRotateTokenKillsTheOldTokenAndEverySession: rotation by bearer token
// (API) and by the landing page's form both hand out a new token once; the
// old token opens nothing, and every session, including one opened with
// the old token, ends on every node (the claim informer a node proxy reads).
func TestRotateTokenKillsTheOldTokenAndEverySession(t *testing.T) {
	e := newEnv(t)
	in, token, first, second := e.aliceTwice(t)
	_, bob := in.signupJSON(t, "bob")
	pv := e.proxyView(t, in)

	in.refuses(t, []refusal{
		{"anonymous", req{method: "POST", path: "/users/alice/token"}, http.StatusUnauthorized},
		{"wrong token", req{method: "POST", path: "/users/alice/token", header: map[string]string{"Authorization": "Bearer " + newBearerToken()}}, http.StatusUnauthorized},
		{"cookie without origin", req{method: "POST", path: "/users/alice/token", cookies: []*http.Cookie{first}}, http.StatusForbidden},
		{"cookie cross origin", req{method: "POST", path: "/users/alice/token", cookies: []*http.Cookie{first}, header: map[string]string{"Origin": "https://evil.example"}}, http.StatusForbidden},
		{"another user", req{method: "POST", path: "/users/alice/token", cookies: []*http.Cookie{bob}, header: in.origin()}, http.StatusForbidden},
	})
	if _, err := in.srv.checkToken("alice", token); err != nil {
		t.Fatal("a refused rotation changed the token")
	}

	resp, body := in.do(t, req{method: "POST", path: "/users/alice/token", header: map[string]string{"Authorization": "Bearer " + token}})
	var out accountResponse
	mustJSON(t, body, &out)
	fresh := cookie(resp, DefaultCookieName)
	if resp.StatusCode != http.StatusOK || out.Token == "" || out.Token == token || fresh == nil {
		t.Fatalf("rotate: %d %s", resp.StatusCode, body)
	}
	pv.refuses(t, "first session", first)
	pv.refuses(t, "session opened with the old token", second)
	testkit.EventuallyNil(t, "the caller's new session accepted", func() error { return pv.accepts(fresh.Value) })
	obj, _, _ := pv.store.GetByKey(e.ns + "/dsh-alice")
	if a, err := account.FromClaim(obj.(*extensions.SandboxClaim)); err != nil || a.TokenMatches(token) || !a.TokenMatches(out.Token) {
		t.Errorf("node proxy view of the token hash after rotation: %v", err)
	}
	if resp, _ := in.do(t, req{method: "POST", path: "/login", header: map[string]string{"Authorization": "Bearer " + token}}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("login with the old token: %d, want 401", resp.StatusCode)
	}

	// The landing page's form, same origin, a top-level navigation, shows
	// the next token once.
	resp, page := in.do(t, req{method: "GET", path: "/", cookies: []*http.Cookie{fresh}})
	if !strings.Contains(page, `action="/users/alice/token"`) {
		t.Fatalf("landing page offers no rotation: %d", resp.StatusCode)
	}
	resp, _ = in.do(t, req{method: "POST", path: "/users/alice/token", form: map[string][]string{}, cookies: []*http.Cookie{fresh}, header: withHeaders(in.origin(), navigation)})
	resp, _, next := in.tokenView(t, resp)
	c, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-store" || next == "" ||
		!(account.Account{TokenHash: mustHash(t, c.Annotations[account.AnnotationTokenHash])}).TokenMatches(next) {
		t.Errorf("form rotation: %d, token shown %q", resp.StatusCode, next)
	}
}
