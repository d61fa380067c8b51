package ssojourney

import (
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/clustertools/ssopreflight"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// sessionCookie is the auth API's session cookie on plain HTTP.
const sessionCookie = "dsh_gw_session"

// TestSSOJourney walks users through the SSO variant's real parts: sign in
// at the provider through oauth2-proxy, sign up on the first visit, the
// agent page, WebSocket and SSE through the node proxies, the admin page
// for a member of ADMIN_GROUPS (oauth2-proxy's X-Forwarded-Groups), which a
// forged group header straight to a node proxy never opens, logout, a login
// change at the provider that keeps the account (the identity is the
// provider's subject), another subject with the old login that does not
// get it, a user outside the allowed group refused by oauth2-proxy, and
// requests that skip oauth2-proxy with a forged identity header refused.
func TestSSOJourney(t *testing.T) {
	p := startSSOPlatform(t)
	alice := providerUser{Subject: "248289761001", Email: "alice@example.com", PreferredUsername: "alice", Groups: []string{allowedGroup}}
	user, ok := account.SSOUserName(alice.Subject)
	if !ok {
		t.Fatal("the provider's subject maps to no user")
	}
	b := newBrowser(t, p)

	t.Run("sign in at the provider and sign up on the first visit", func(t *testing.T) {
		p.queue(t, alice)
		code, body := b.do(t, http.MethodGet, "/", nil)
		if code != http.StatusOK || !strings.Contains(body, "Continue as "+user) {
			t.Fatalf("landing page after sign-in: %d, want the SSO user %s offered: %.500s", code, user, body)
		}
		if b.cookie("_oauth2_proxy") == "" {
			t.Fatal("oauth2-proxy set no session cookie")
		}
		if code, body := b.do(t, http.MethodPost, "/users", url.Values{"user": {user}}); code >= 400 {
			t.Fatalf("signup: %d %.300s", code, body)
		}
		if b.cookie(sessionCookie) == "" {
			t.Fatal("signup set no session cookie")
		}
		b.waitAgent(t, user)
	})

	t.Run("WebSocket and SSE through the node proxies", func(t *testing.T) {
		b.websocketEcho(t, user)
		b.events(t, user, 2)
	})

	t.Run("a member of ADMIN_GROUPS opens the admin page through oauth2-proxy, and only through it", func(t *testing.T) {
		navigation := map[string]string{"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}
		code, body := b.doWith(t, http.MethodGet, "/admin/accounts", nil, navigation)
		if code != http.StatusOK || !strings.Contains(body, `href="/admin/accounts/`+user+`"`) {
			t.Fatalf("the admin page for a member of %s: %d %.500s", allowedGroup, code, body)
		}
		page := map[string]string{"Cookie": sessionCookie + "=" + b.cookie(sessionCookie), "X-Forwarded-Groups": allowedGroup, "Accept": "text/html"}
		for k, v := range navigation {
			page[k] = v
		}
		for _, f := range []forgery{{from: net.IPv4(127, 0, 0, 9), header: page}, {from: net.IPv4(127, 0, 0, 1), header: page}} {
			for _, node := range p.nodeAddrs {
				if code, _ := f.send(t, node, http.MethodGet, "/admin/accounts", alice.Subject); code != http.StatusForbidden {
					t.Errorf("alice's session with a forged group at %s from %s: %d, want 403", node, f.from, code)
				}
			}
		}
	})

	t.Run("requests that skip oauth2-proxy with a forged identity are refused", func(t *testing.T) {
		// From any address: an untrusted one, and oauth2-proxy's own
		// (in TRUSTED_PROXIES), with no proof or a wrong one.
		wrongProof := "Basic " + base64.StdEncoding.EncodeToString([]byte(alice.Subject+":"+strings.Repeat("0", 64)))
		for _, f := range []forgery{
			{from: net.IPv4(127, 0, 0, 9)},
			{from: net.IPv4(127, 0, 0, 1)},
			{from: net.IPv4(127, 0, 0, 1), auth: wrongProof},
		} {
			for _, node := range p.nodeAddrs {
				if code, body := f.send(t, node, http.MethodPost, "/login", alice.Subject); code != http.StatusUnauthorized || strings.Contains(body, user) {
					t.Errorf("forged login at %s from %s: %d %.200s, want 401", node, f.from, code, body)
				}
				if code, body := f.send(t, node, http.MethodPost, "/users", alice.Subject); code < 400 {
					t.Errorf("forged signup at %s from %s: %d %.200s, want a refusal", node, f.from, code, body)
				}
				if code, body := f.send(t, node, http.MethodGet, "/", alice.Subject); strings.Contains(body, "Continue as") {
					t.Errorf("the landing page at %s believed a forged identity from %s: %d", node, f.from, code)
				}
				if code, body := f.send(t, node, http.MethodGet, "/u/"+user+"/", alice.Subject); code == http.StatusOK && strings.Contains(body, "DSH Web") {
					t.Errorf("the agent at %s answered a forged identity from %s", node, f.from)
				}
			}
		}
		// The same user through oauth2-proxy is believed.
		if code, body := b.do(t, http.MethodPost, "/login", url.Values{}); code >= 400 {
			t.Errorf("login through oauth2-proxy: %d %.300s, want the SSO user believed", code, body)
		}
		// oauth2-proxy itself sends a request without its cookie to the
		// provider, whatever identity header it carries.
		req, _ := http.NewRequest(http.MethodGet, "http://"+p.proxyAddr+"/", nil)
		req.Host = strings.TrimPrefix(p.origin(), "http://")
		req.Header.Set(identityHeader, alice.Subject)
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusFound {
			t.Errorf("oauth2-proxy answered a request without its cookie with %s, want a redirect to sign in", resp.Status)
		}
	})

	t.Run("the shipped preflight passes against the journey's cluster and node proxy", func(t *testing.T) {
		peer := untrustedPeer(t, p.nodeAddrs[0])
		run := p.preflight(t, peer.addr, nil)
		if run.code != 0 || len(run.fails()) > 0 {
			t.Fatalf("sandgate-preflight exited %d, want 0:\n%s%s", run.code, run.stdout, run.stderr)
		}
		if peer.forwarded.Load() == 0 {
			t.Error("the preflight's probe never reached the node proxy")
		}
		// Also from 127.0.0.1, oauth2-proxy's address, in the node
		// proxies' TRUSTED_PROXIES: without the proof, no address is
		// believed.
		if run := p.preflight(t, p.nodeAddrs[0], nil); run.code != 0 || len(run.fails()) > 0 {
			t.Errorf("sandgate-preflight probing from a trusted proxy's address exited %d, want 0:\n%s%s", run.code, run.stdout, run.stderr)
		}
		for _, check := range []string{ssopreflight.CheckNetworkPolicy, ssopreflight.CheckExposure, ssopreflight.CheckHeader} {
			if !strings.Contains(run.stdout, "ok   "+check+"\n") {
				t.Errorf("no passing %s check:\n%s", check, run.stdout)
			}
		}
	})

	t.Run("the preflight fails node proxies that trust too much", func(t *testing.T) {
		catchAll := func(objs []*unstructured.Unstructured) {
			for _, obj := range objs {
				if obj.GetKind() == "ConfigMap" && strings.HasPrefix(obj.GetName(), "nodeproxy-config") {
					if err := unstructured.SetNestedField(obj.Object, "127.0.0.1/32,0.0.0.0/0", "data", "TRUSTED_PROXIES"); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		for _, tc := range []struct {
			name   string
			probe  string
			change func([]*unstructured.Unstructured)
			reason string
		}{
			{"configured to trust a catch-all", untrustedPeer(t, p.nodeAddrs[0]).addr, catchAll, "trusts every peer (TRUSTED_PROXIES has 0.0.0.0/0)"},
		} {
			run := p.preflight(t, tc.probe, tc.change)
			fails := run.fails()
			if run.code != 1 || len(fails) != 1 || !strings.HasPrefix(fails[0], "FAIL "+ssopreflight.CheckHeader+": ") || !strings.Contains(fails[0], tc.reason) {
				t.Errorf("%s: sandgate-preflight exited %d, want 1 with one FAIL %s line with %q:\n%s%s", tc.name, run.code, ssopreflight.CheckHeader, tc.reason, run.stdout, run.stderr)
			}
		}
	})

	t.Run("logout ends the session", func(t *testing.T) {
		old := b.cookie(sessionCookie)
		if code, body := b.do(t, http.MethodPost, "/logout", url.Values{}); code >= 400 {
			t.Fatalf("logout: %d %.300s", code, body)
		}
		if b.cookie(sessionCookie) != "" {
			t.Error("the session cookie survived logout")
		}
		// The old session token, replayed with oauth2-proxy's cookie, no
		// longer opens the agent on any node.
		replay := newBrowser(t, p)
		u, _ := url.Parse(p.origin())
		replay.client.Jar.SetCookies(u, []*http.Cookie{{Name: "_oauth2_proxy", Value: b.cookie("_oauth2_proxy")}, {Name: sessionCookie, Value: old}})
		testkit.Eventually(t, "the logged-out session refused", func() bool {
			code, body := replay.do(t, http.MethodGet, "/u/"+user+"/api/messages", nil)
			return code != http.StatusOK && !strings.Contains(body, "DSH Web")
		})
	})

	t.Run("a login change at the provider keeps the account", func(t *testing.T) {
		b.do(t, http.MethodGet, "/oauth2/sign_out", nil)
		renamed := alice
		renamed.Email, renamed.PreferredUsername = "alice.renamed@example.org", "alice-renamed"
		p.queue(t, renamed)
		code, body := b.do(t, http.MethodGet, "/", nil)
		if code != http.StatusOK || !strings.Contains(body, "Continue as "+user) {
			t.Fatalf("landing page after a login change: %d, want %s offered: %.500s", code, user, body)
		}
		if code, body := b.do(t, http.MethodPost, "/login", url.Values{}); code >= 400 {
			t.Fatalf("login after a login change: %d %.300s", code, body)
		}
		b.waitAgent(t, user)
	})

	t.Run("another subject with the old login gets another account", func(t *testing.T) {
		mallory := newBrowser(t, p)
		p.queue(t, providerUser{Subject: "248289761002", Email: alice.Email, PreferredUsername: alice.PreferredUsername, Groups: []string{allowedGroup}})
		code, body := mallory.do(t, http.MethodGet, "/", nil)
		if code != http.StatusOK || strings.Contains(body, "Continue as "+user) {
			t.Fatalf("another subject is offered %s: %d %.300s", user, code, body)
		}
		if code, body := mallory.do(t, http.MethodPost, "/login", url.Values{}); code != http.StatusUnauthorized {
			t.Fatalf("login of another subject: %d %.300s, want 401 (no account)", code, body)
		}
	})

	t.Run("oauth2-proxy refuses a user outside the allowed group", func(t *testing.T) {
		outsider := newBrowser(t, p)
		p.queue(t, providerUser{Subject: "248289761003", Email: "eve@example.com", PreferredUsername: "eve"})
		if code, body := outsider.do(t, http.MethodGet, "/", nil); code != http.StatusForbidden {
			t.Fatalf("a user outside %s: %d %.300s, want 403", allowedGroup, code, body)
		}
	})
}

// forgery is a request that skips oauth2-proxy: from an address, with an
// Authorization value or none.
type forgery struct {
	from   net.IP
	auth   string
	header map[string]string // more headers, set last
}

// send sends method path straight to a node proxy as f says, with
// identity in the SSO header.
func (f forgery) send(t *testing.T, node, method, path, identity string) (int, string) {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: f.from}}
	client := &http.Client{
		Transport:     &http.Transport{DialContext: func(ctx context.Context, n, _ string) (net.Conn, error) { return d.DialContext(ctx, n, node) }},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       30 * time.Second,
	}
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("{}")
	}
	req, err := http.NewRequest(method, "http://"+publicHost+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(identityHeader, identity)
	if f.auth != "" {
		req.Header.Set("Authorization", f.auth)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range f.header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s at %s: %v", method, path, node, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}
