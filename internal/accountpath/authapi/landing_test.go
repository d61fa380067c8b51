package authapi

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// checkPage asserts the page rules: HTML, strict CSP admitting exactly the
// inline style, no script or external asset, never cached.
func checkPage(t *testing.T, resp *http.Response, page string) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	style := between(page, "<style>", "</style>")
	sum := sha256.Sum256([]byte(style))
	for _, want := range []string{"default-src 'none'", "style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'", "form-action 'self'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "script-src") || strings.Contains(csp, "unsafe") {
		t.Errorf("CSP %q admits scripts or unsafe sources", csp)
	}
	for _, bad := range []string{"<script", "http://", "https://", " src=", "<link", "<img", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("security headers %v", resp.Header)
	}
}

func TestLandingPageAnonymous(t *testing.T) {
	e := newEnv(t)
	in := e.start(t, func(o *Options) { o.InviteCode = "secret-invite" })
	resp, page := in.do(t, req{method: "GET", path: "/"})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /: %d", resp.StatusCode)
	}
	checkPage(t, resp, page)
	for _, want := range []string{`action="/users"`, `name="user"`, `name="invite"`, `action="/login"`, `name="token"`} {
		if !strings.Contains(page, want) {
			t.Errorf("anonymous page lacks %s", want)
		}
	}
	if strings.Contains(page, "secret-invite") {
		t.Error("the page shows the invite code")
	}
	if resp, _ := in.do(t, req{method: "GET", path: "/recreate"}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("anonymous GET /recreate: %d, want 303", resp.StatusCode)
	}
	if resp, _ := in.do(t, req{method: "GET", path: "/nope"}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nope: %d", resp.StatusCode)
	}
	if resp, _ := in.do(t, req{method: "PUT", path: "/users"}); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("PUT /users: %d", resp.StatusCode)
	}
}

func TestLandingPageShowsSandboxState(t *testing.T) {
	e := newEnv(t)
	e.runCluster(t, 1, controller.Delays{WarmAdoption: 2 * time.Second, Resume: time.Minute})
	in := e.start(t, func(o *Options) { o.WakeTimeout = 50 * time.Millisecond })
	_, ck := in.signupJSON(t, "alice")
	state := func() (string, string) {
		t.Helper()
		resp, page := in.do(t, req{method: "GET", path: "/", cookies: []*http.Cookie{ck}})
		checkPage(t, resp, page)
		return between(page, `<span class="state state-`, `"`), page
	}
	s, page := state()
	if s != StateWaking || !strings.Contains(page, `http-equiv="refresh"`) {
		t.Errorf("fresh claim: state %q (refreshing: %v)", s, strings.Contains(page, "refresh"))
	}
	for _, want := range []string{"Signed in as <strong>alice</strong>", `href="/u/alice/"`, `action="/logout"`, `href="/recreate"`, `href="/users/alice/delete"`} {
		if !strings.Contains(page, want) {
			t.Errorf("account page lacks %s", want)
		}
	}

	testkit.Eventually(t, "adopted claim shows "+StateReady, func() bool { s, _ = state(); return s == StateReady })
	c, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A merge patch, as the platform suspends: the controller stand-in may
	// be updating the same Sandbox.
	suspend := []byte(`{"spec":{"operatingMode":"` + string(agents.OperatingModeSuspended) + `"}}`)
	if _, err := e.sb.Sandboxes(e.ns).Patch(t.Context(), c.Status.Sandbox.Name, types.MergePatchType, suspend, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "suspended sandbox shows "+StateSuspended, func() bool { s, _ = state(); return s == StateSuspended })
}

func TestConfirmationPages(t *testing.T) {
	_, in := warmStart(t)
	_, ck := in.signupJSON(t, "alice")
	resp, page := in.do(t, req{method: "GET", path: "/recreate", cookies: []*http.Cookie{ck}})
	checkPage(t, resp, page)
	if resp.StatusCode != 200 || !strings.Contains(page, `action="/recreate"`) || !strings.Contains(page, `href="/"`) {
		t.Errorf("recreate confirmation: %d", resp.StatusCode)
	}
	resp, page = in.do(t, req{method: "GET", path: "/users/alice/delete", cookies: []*http.Cookie{ck}})
	checkPage(t, resp, page)
	if resp.StatusCode != 200 || !strings.Contains(page, `action="/users/alice/delete"`) || !strings.Contains(page, `name="confirm"`) {
		t.Errorf("delete confirmation: %d", resp.StatusCode)
	}
	if resp, _ := in.do(t, req{method: "GET", path: "/users/bob/delete", cookies: []*http.Cookie{ck}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("someone else's delete page: %d", resp.StatusCode)
	}
	// The confirmed form, posted as the browser would, deletes.
	resp, _ = in.do(t, req{method: "POST", path: "/users/alice/delete", form: url.Values{"confirm": {"alice"}}, cookies: []*http.Cookie{ck}, header: in.origin()})
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("confirmed delete: %d", resp.StatusCode)
	}
}
