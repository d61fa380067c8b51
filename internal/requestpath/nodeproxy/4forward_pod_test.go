package nodeproxy

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestProxyHeaderPolicy sends every kind of forged identity, credential and
// hop header; the app's echo shows none of them arrived, only the
// handshake cookie, the browser's Host and the proxy's X-Forwarded-*.
func TestProxyHeaderPolicy(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.addUser("alice", "node-a")
	tok := h.session("alice")
	resp := h.get("node-a", "/u/alice/api/echo?x=1&y=%2F", map[string]string{
		"Cookie":               cookie(tok) + "; other=1",
		"Authorization":        "Basic YWxpY2U6cHc=",
		"Forwarded":            "for=1.2.3.4",
		"X-Forwarded-User":     "admin",
		"X-Forwarded-For":      "1.2.3.4",
		"X-Forwarded-Proto":    "https",
		"X-Forwarded-Host":     "evil.test",
		"X-Forwarded-Groups":   "admins",
		"X-Auth-Request-User":  "admin",
		"X-Auth-Request-Email": "admin@example.com",
		"X-Real-Ip":            "1.2.3.4",
		"X-Sandgate-Hop":       "node-z",
		"Proxy-Authorization":  "Basic eA==",
		"Connection":           "keep-alive, X-Drop-Me",
		"X-Drop-Me":            "1",
		"Te":                   "trailers",
		"X-Custom":             "kept",
		"Accept":               "application/json",
	})
	e := echo(t, resp)
	if e.Path != "/api/echo" || e.RawQuery != "x=1&y=%2F" || e.RequestURI != "/api/echo?x=1&y=%2F" {
		t.Errorf("upstream saw path %q query %q uri %q", e.Path, e.RawQuery, e.RequestURI)
	}
	if e.Host != testHost {
		t.Errorf("upstream Host = %q, want the browser's %q", e.Host, testHost)
	}
	for _, name := range []string{"Authorization", "Forwarded", "X-Forwarded-User", "X-Forwarded-Groups",
		"X-Auth-Request-User", "X-Auth-Request-Email", "X-Real-Ip", "X-Sandgate-Hop", "Proxy-Authorization",
		"X-Drop-Me", "Te"} {
		if v, ok := e.Headers[name]; ok {
			t.Errorf("header %s reached the app: %q", name, v)
		}
	}
	if c := e.Headers.Get("Cookie"); !strings.HasPrefix(c, "dsh-auth-") || strings.Contains(c, tok) || strings.Contains(c, "other=") {
		t.Errorf("upstream Cookie = %q, want only the handshake cookie", c)
	}
	want := map[string]string{"X-Forwarded-For": "127.0.0.1", "X-Forwarded-Proto": "http", "X-Forwarded-Host": testHost,
		"X-Custom": "kept", "Accept": "application/json"}
	for k, v := range want {
		if got := e.Headers.Values(k); !slices.Equal(got, []string{v}) {
			t.Errorf("upstream %s = %q, want [%q]", k, got, v)
		}
	}
	if resp.Header.Get("Set-Cookie") != "" {
		t.Errorf("response carries Set-Cookie %q", resp.Header.Get("Set-Cookie"))
	}
}

// TestProxyAllowlist forwards only the allowlisted client headers (and the
// body's own), in UPSTREAM_HEADER_ALLOWLIST mode.
func TestProxyAllowlist(t *testing.T) {
	h := newHarness(t, harnessOpts{modify: func(o *Options) { o.HeaderAllowlist = []string{"Accept", "x-custom"} }})
	h.addUser("alice", "node-a")
	e := echo(t, h.get("node-a", "/u/alice/api/echo", map[string]string{
		"Cookie": cookie(h.session("alice")), "Accept": "text/plain", "X-Custom": "1", "X-Other": "2",
		"User-Agent": "ua", "X-Forwarded-User": "admin",
	}))
	for _, name := range []string{"X-Other", "User-Agent", "X-Forwarded-User"} {
		if _, ok := e.Headers[name]; ok {
			t.Errorf("%s reached the app in allowlist mode", name)
		}
	}
	if e.Headers.Get("Accept") != "text/plain" || e.Headers.Get("X-Custom") != "1" || !strings.HasPrefix(e.Headers.Get("Cookie"), "dsh-auth-") {
		t.Errorf("allowlisted or required headers missing: %v", e.Headers)
	}
}

// TestLocationRewrittenAndCookiesDropped uses the app's own token exchange,
// which answers 303 Location "/" with its auth cookie: the browser gets
// the Location under /u/alice/ and never the cookie.
func TestLocationRewrittenAndCookiesDropped(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	p := h.addUser("alice", "node-a")
	token := launchToken(t, p)
	resp := h.get("node-a", "/u/alice/?token="+token, map[string]string{"Cookie": cookie(h.session("alice"))})
	readAll(t, resp)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/u/alice/" {
		t.Errorf("status %d Location %q, want 303 /u/alice/", resp.StatusCode, resp.Header.Get("Location"))
	}
	if sc := resp.Header.Values("Set-Cookie"); len(sc) != 0 {
		t.Errorf("upstream Set-Cookie reached the browser: %q", sc)
	}
}

// launchToken reads the app's newest launch token from its log.
func launchToken(t *testing.T, p *pod) string {
	t.Helper()
	var tok string
	testkit.Eventually(t, "launch line", func() bool {
		p.log.mu.Lock()
		defer p.log.mu.Unlock()
		for _, l := range p.log.lines {
			if _, v, ok := strings.Cut(l, "?token="); ok {
				tok = v
			}
		}
		return tok != ""
	})
	return tok
}
