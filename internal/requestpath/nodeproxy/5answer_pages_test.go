package nodeproxy

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/testing/apidoc"
	"github.com/sandgate/sandgate/internal/userorigin"
	"github.com/sandgate/sandgate/internal/webpage"
)

// navigationHeaders are what Chromium sends when it loads a page into a
// tab.
func navigationHeaders(extra map[string]string) map[string]string {
	h := map[string]string{
		"Accept":         "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
		"Sec-Fetch-Mode": "navigate",
		"Sec-Fetch-Dest": "document",
	}
	for k, v := range extra {
		h[k] = v
	}
	return h
}

// checkProxyPage asserts the rules of every sandgate page: HTML with the
// strict CSP, never cached, no script.
func checkProxyPage(t *testing.T, resp *http.Response, body string) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); csp != webpage.CSP() {
		t.Errorf("CSP %q, want %q", csp, webpage.CSP())
	}
	if resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("headers %v", resp.Header)
	}
	if strings.Contains(body, "<script") || !strings.Contains(body, "<style>"+webpage.Style+"</style>") {
		t.Errorf("page body: %s", body)
	}
}

// TestErrorPagesForNavigations: a browser navigation that ends in 401,
// 403, 404 or 503 gets a page with the next step; the same request from
// an API client, a sub-resource or a fetch keeps the plain body.
func TestErrorPagesForNavigations(t *testing.T) {
	h := newHarness(t, harnessOpts{modify: func(o *Options) { o.MaxInFlightPerUser = 1 }})
	h.addUser("alice", "node-a")
	h.addUser("bob", "node-a")
	alice := cookie(h.session("alice"))
	h.dir.edit("bob", func(e *informer.Entry) { e.Route = informer.Route{State: informer.StateStopped, Sandbox: "sb-bob"} })
	bob := cookie(h.session("bob"))
	h.addUser("carol", "node-a")
	h.dir.edit("carol", func(e *informer.Entry) { e.Route = informer.Route{State: informer.StateInvalid, Sandbox: "sb-carol"} })
	carol := cookie(h.session("carol"))
	doc, err := apidoc.Load()
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, path, cookie string
		code               int
		heading, link      string
	}{
		{"signed out", "/u/alice/", "", 401, "Sign in required", `href="/?next=%2Fu%2Falice%2F"`},
		{"another user's path", "/u/bob/", alice, 403, "Not your agent", `href="/u/alice/"`},
		{"no such account, signed in", "/u/nosuchuser/", alice, 403, "No agent at this address", `href="/u/alice/"`},
		{"no such account, signed out", "/u/nosuchuser/", "", 401, "No agent at this address", `href="/">Sign in</a>`},
		{"no such user path", "/u/-x/", alice, 404, "Not found", `href="/"`},
		{"stopped pod", "/u/bob/", bob, 503, "Try again shortly", `href="/"`},
		{"configuration rejected for good", "/u/carol/", carol, 503, "Your agent cannot start", "An operator must fix it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tc.cookie != "" {
				hdr["Cookie"] = tc.cookie
			}
			resp := h.get("node-a", tc.path, navigationHeaders(hdr))
			body := readAll(t, resp)
			if resp.StatusCode != tc.code || !strings.Contains(body, "<h1>"+tc.heading+"</h1>") || !strings.Contains(body, tc.link) {
				t.Fatalf("navigation: %d %s", resp.StatusCode, body)
			}
			checkProxyPage(t, resp, body)
			retryAfter, refresh := resp.Header.Get("Retry-After") != "", strings.Contains(body, `http-equiv="refresh"`)
			switch {
			case tc.name == "configuration rejected for good":
				if retryAfter || refresh {
					t.Errorf("a page that retries what no retry mends: %v %s", resp.Header, body)
				}
			case tc.code == 503 && (!retryAfter || !refresh):
				t.Errorf("503 page without Retry-After or refresh: %v %s", resp.Header, body)
			}
			plainCode := tc.code
			if tc.code == 403 {
				plainCode = 401 // API clients keep the reference design's answer
				if err := doc.Differs("GET /u/<user>/", plainCode, tc.code); err != nil {
					t.Error(err)
				}
			}
			for name, h2 := range map[string]map[string]string{
				"API client":   {"Accept": "application/json"},
				"sub-resource": {"Accept": "text/html", "Sec-Fetch-Dest": "iframe", "Sec-Fetch-Mode": "navigate"},
				"fetch":        {"Accept": "text/html", "Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"},
			} {
				for k, v := range hdr {
					h2[k] = v
				}
				resp := h.get("node-a", tc.path, h2)
				body := readAll(t, resp)
				if resp.StatusCode != plainCode || strings.Contains(body, "<html") || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
					t.Errorf("%s: %d %q %s", name, resp.StatusCode, resp.Header.Get("Content-Type"), body)
				}
			}
		})
	}
}

// TestWakingPageComesAtOnce: a navigation to a suspended sandbox gets the
// waking page well before WAKE_TIMEOUT, naming the state this node sees;
// its reload opens the agent once the sandbox is Ready. After WAKE_TIMEOUT
// the page says what to do.
func TestWakingPageComesAtOnce(t *testing.T) {
	const wakeTimeout = time.Minute
	h := newHarness(t, wakeOpts(wakeTimeout, nil))
	h.addUser("alice", "node-a")
	ready := h.suspend("alice")
	sess := cookie(h.session("alice"))

	start := time.Now()
	resp := h.get("node-a", "/u/alice/", navigationHeaders(map[string]string{"Cookie": sess}))
	body := readAll(t, resp)
	took := time.Since(start)
	if took > wakeTimeout/2 {
		t.Errorf("waking page after %v, want well before WAKE_TIMEOUT %v", took, wakeTimeout)
	}
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "<title>Waking your agent</title>") ||
		!strings.Contains(body, `http-equiv="refresh"`) || !strings.Contains(body, "<dd>suspended</dd>") || strings.Contains(body, "longer than usual") {
		t.Fatalf("waking page: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	checkProxyPage(t, resp, body)
	if h.auth.wakes.Load() != 1 {
		t.Errorf("%d wake calls, want 1", h.auth.wakes.Load())
	}

	for waited := time.Duration(0); waited <= wakeTimeout; waited += wakePageRefresh * time.Second {
		h.clock.Advance(wakePageRefresh * time.Second)
		resp = h.get("node-a", "/u/alice/", navigationHeaders(map[string]string{"Cookie": sess}))
		body = readAll(t, resp)
	}
	if resp.StatusCode != 503 || !strings.Contains(body, "<h1>Still waking your agent</h1>") || !strings.Contains(body, "longer than usual") ||
		!strings.Contains(body, `http-equiv="refresh"`) {
		t.Errorf("reloads past WAKE_TIMEOUT: %d %s", resp.StatusCode, body)
	}
	try, account, recreate := strings.Index(body, `href="/u/alice/">Try again<`), strings.Index(body, `href="/">Your account<`), strings.Index(body, `href="/recreate">Recreate workspace`)
	if try < 0 || account < try || recreate < account {
		t.Errorf("past WAKE_TIMEOUT, want the links try again, your account, then recreate: %s", body)
	}

	h.dir.set("alice", ready)
	resp = h.get("node-a", "/u/alice/", navigationHeaders(map[string]string{"Cookie": sess}))
	if body := readAll(t, resp); resp.StatusCode != 200 || strings.Contains(body, "Waking your agent") {
		t.Errorf("reload once Ready: %d %s", resp.StatusCode, body)
	}
}

// TestSignInLinkCarriesNext: the sign-in page a signed-out navigation
// links to carries the path it asked for, as the main origin names it, so
// that the auth API can return there once signed in; on a user origin, a
// refused entry names the path the entry was to go on to.
func TestSignInLinkCarriesNext(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.addUser("alice", "node-a")
	resp := h.get("node-a", "/u/alice/some/page?x=1", navigationHeaders(nil))
	if body := readAll(t, resp); resp.StatusCode != 401 || !strings.Contains(body, `<a class="button" href="/?next=%2Fu%2Falice%2Fsome%2Fpage%3Fx%3D1">Sign in</a>`) {
		t.Errorf("path routing: %d %s", resp.StatusCode, body)
	}

	e := newEntryEnv(t, nil)
	e.addUser("alice", "node-a")
	resp = e.get("node-a", userorigin.EnterPath+"?code=x&next=%2Fchat%3Fday%3D1", navigationHeaders(map[string]string{"Host": "alice." + securityUserDomain}))
	if body := readAll(t, resp); resp.StatusCode != 401 || !strings.Contains(body, `href="http://`+testHost+`/?next=%2Fu%2Falice%2Fchat%3Fday%3D1"`) {
		t.Errorf("refused entry on a user origin: %d %s", resp.StatusCode, body)
	}
}
