package authapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestLogoutEverywhere: signing out of all browsers ends every session of
// the account on every node (the claim informer a node proxy reads),
// while the claim, its sandbox and the token stay; only the owner may.
func TestLogoutEverywhere(t *testing.T) {
	e := newEnv(t)
	in, token, first, second := e.aliceTwice(t)
	_, bob := in.signupJSON(t, "bob")
	pv := e.proxyView(t, in)
	before, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	in.refuses(t, []refusal{
		{"anonymous", req{method: "POST", path: "/users/alice/logout"}, http.StatusUnauthorized},
		{"cookie without origin", req{method: "POST", path: "/users/alice/logout", cookies: []*http.Cookie{first}}, http.StatusForbidden},
		{"another user", req{method: "POST", path: "/users/alice/logout", cookies: []*http.Cookie{bob}, header: in.origin()}, http.StatusForbidden},
	})
	if err := pv.accepts(first.Value); err != nil {
		t.Fatalf("a refused sign-out ended a session: %v", err)
	}

	resp, _ := in.do(t, req{method: "POST", path: "/users/alice/logout", form: url.Values{}, cookies: []*http.Cookie{first}, header: in.origin()})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" || resp.Header.Get("Clear-Site-Data") == "" {
		t.Fatalf("form sign-out everywhere: %d %v", resp.StatusCode, resp.Header)
	}
	if ck := cookie(resp, DefaultCookieName); ck == nil || ck.MaxAge >= 0 {
		t.Errorf("the caller's cookie is not dropped: %v", ck)
	}
	pv.refuses(t, "the signing-out browser's session", first)
	pv.refuses(t, "another browser's session", second)
	if err := pv.accepts(bob.Value); err != nil {
		t.Errorf("another account's session ended: %v", err)
	}
	after, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
	if err != nil || after.UID != before.UID || after.Status.Sandbox.Name != before.Status.Sandbox.Name {
		t.Fatalf("claim replaced: %v", err)
	}
	third := in.login(t, token) // the token stays
	testkit.EventuallyNil(t, "a session after the sign-out accepted", func() error { return pv.accepts(third.Value) })

	// An API client by bearer token: 204.
	resp, body := in.do(t, req{method: "POST", path: "/users/alice/logout", header: map[string]string{"Authorization": "Bearer " + token}})
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("bearer sign-out everywhere: %d %s", resp.StatusCode, body)
	}
	pv.refuses(t, "the session after the first sign-out", third)
}

// TestErrorPagesLinkTheNextStep: a browser's refusal is a page whose link
// leads on (sign in, one's own agent, the start page, trying again); a
// JSON client keeps the JSON body and a plain client the plain 404.
func TestErrorPagesLinkTheNextStep(t *testing.T) {
	_, in := warmStart(t)
	_, bob := in.signupJSON(t, "bob")
	html := map[string]string{"Accept": "text/html"}

	resp, page := in.do(t, req{method: "GET", path: "/users/alice/delete", cookies: []*http.Cookie{bob}, header: html})
	checkPage(t, resp, page)
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(page, `href="/u/bob/"`) {
		t.Errorf("another user's page: %d %s", resp.StatusCode, page)
	}
	resp, page = in.do(t, req{method: "GET", path: "/no-such-page", header: html})
	checkPage(t, resp, page)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(page, `href="/"`) {
		t.Errorf("browser 404: %d %s", resp.StatusCode, page)
	}
	if resp, body := in.do(t, req{method: "GET", path: "/no-such-page"}); resp.StatusCode != http.StatusNotFound || strings.Contains(body, "<html") {
		t.Errorf("plain 404: %d %s", resp.StatusCode, body)
	}
	if resp, _ := in.do(t, req{method: "GET", path: "/users", header: html}); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET of a POST route: %d, want 405", resp.StatusCode)
	}
	resp, body := in.do(t, req{method: "POST", path: "/users/alice/token", cookies: []*http.Cookie{bob}, header: map[string]string{"Origin": in.http.URL, "Accept": "application/json"}})
	if resp.StatusCode != http.StatusForbidden || strings.TrimSpace(body) != `{"error":"not your account"}` {
		t.Errorf("JSON 403: %d %s", resp.StatusCode, body)
	}
}

func TestNextStepsByStatus(t *testing.T) {
	for _, tc := range []struct {
		method, path, retry string
		code                int
		href, text          string
	}{
		{"POST", "/login", "", 401, "/", "Sign in"},
		{"GET", "/x", "", 404, "/", "Back to the start page"},
		{"POST", "/users", "7", 429, "/", "Try again in 7 s"},
		{"GET", "/recreate", "1", 503, "/recreate", "Try again in 1 s"},
		{"GET", "//evil.example/x", "1", 503, "/", "Try again in 1 s"},
	} {
		s := &Server{opts: Options{CookieName: DefaultCookieName}}
		r, _ := http.NewRequest(tc.method, "http://gw.example"+tc.path, nil)
		w := &recorder{ResponseWriter: newHeaderOnly()}
		if tc.retry != "" {
			w.Header().Set("Retry-After", tc.retry)
		}
		links := s.nextSteps(w, r, tc.code)
		if len(links) == 0 || links[0].Href != tc.href || links[0].Text != tc.text {
			t.Errorf("%s %s %d: %+v", tc.method, tc.path, tc.code, links)
		}
	}
}

// headerOnly is a ResponseWriter that keeps headers only.
type headerOnly struct{ h http.Header }

func newHeaderOnly() *headerOnly                  { return &headerOnly{h: http.Header{}} }
func (w *headerOnly) Header() http.Header         { return w.h }
func (w *headerOnly) Write(b []byte) (int, error) { return len(b), nil }
func (w *headerOnly) WriteHeader(int)             {}

// TestBrowserSignupAnswersBeforeReady: a browser's signup shows its token
// page at once, before the sandbox is Ready (the agent's starting page
// takes over); a JSON client still waits up to WAKE_TIMEOUT for it.
func TestBrowserSignupAnswersBeforeReady(t *testing.T) {
	e := newEnv(t)
	e.runCluster(t, 1, controller.Delays{WarmAdoption: 20 * time.Second, ColdStart: 20 * time.Second})
	in := e.start(t, func(o *Options) { o.WakeTimeout = time.Minute })
	resp, _ := in.do(t, req{method: "POST", path: "/users", form: url.Values{"user": {"alice"}}, header: in.origin()})
	if resp, page, token := in.tokenView(t, resp); resp.StatusCode != http.StatusOK || token == "" {
		t.Fatalf("browser signup: %d %s", resp.StatusCode, page)
	}
	c, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range c.Status.Conditions {
		if cond.Type == agents.ConditionReady && cond.Status == metav1.ConditionTrue {
			t.Fatal("the browser's signup waited for the sandbox")
		}
	}
}

// FuzzRetryTarget: whatever path a browser sends, "try again" leads to a
// local path of this site, never to another host.
func FuzzRetryTarget(f *testing.F) {
	for _, p := range []string{"/", "/recreate", "//evil.example/x", "/\\evil", "/u/alice/x?y"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		r := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: p}}
		got := retryTarget(r)
		if !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") || strings.Contains(got, "\\") {
			t.Errorf("retryTarget(%q) = %q", p, got)
		}
	})
}
