package nodeproxy_test

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/requestpath/nodeproxy"
	"github.com/sandgate/sandgate/internal/testing/testkit"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// TestE2ESubdomain runs the must-show list of the per-user origins issue
// on the real API server, the simulated two-node cluster, the auth API and
// two node proxies in subdomain routing. What an agent page's script could
// send is sent here as the browser would send it: same-origin requests
// with the origin cookie, cross-origin ones with the browser's Origin.
func TestE2ESubdomain(t *testing.T) {
	p := startPlatformWith(t, platformOptions{Subdomain: true})
	alice, bob := p.signup(0, "alice"), p.signup(1, "bob")
	aliceHost, bobHost := userHost("alice"), userHost("bob")
	aliceOrigin := map[string]string{"Cookie": originCookie(alice.origin)}

	t.Run("main host sends the browser to the user origin with an entry code", func(t *testing.T) {
		entry := p.mint(0, "alice", alice.session, "/chat?x=1")
		if got := entry.Query().Get("next"); got != "/chat?x=1" {
			t.Errorf("next %q, want the path below /u/alice/", got)
		}
		resp := p.redeem(1, aliceHost, entry)
		readAll(t, resp)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/chat?x=1" {
			t.Fatalf("entry: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		ck := findCookie(resp, nodeproxy.DefaultOriginCookieName)
		if ck == nil {
			t.Fatal("no origin session cookie")
		}
		raw := strings.ToLower(resp.Header.Get("Set-Cookie"))
		if strings.Contains(raw, "domain=") || !ck.HttpOnly || ck.Path != "/" || ck.SameSite != http.SameSiteLaxMode {
			t.Errorf("origin cookie %q: want host-only, HttpOnly, Path=/, SameSite=Lax", resp.Header.Get("Set-Cookie"))
		}
		if strings.Contains(raw, nodeproxy.DefaultCookieName+"=") {
			t.Error("the main session cookie was set on the user origin")
		}
		for i := range p.nodes {
			resp := p.getAt(i, aliceHost, "/api/echo", map[string]string{"Cookie": originCookie(ck.Value)})
			e := echo(t, resp)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("app through node %d: %d", i, resp.StatusCode)
			}
			if c := e.Headers["Cookie"]; strings.Contains(strings.Join(c, ";"), nodeproxy.DefaultOriginCookieName) {
				t.Errorf("the app saw the origin cookie: %q", c)
			}
		}
		if page := readAll(t, p.getAt(0, aliceHost, "/", aliceOrigin)); !strings.Contains(page, `<base href="./">`) {
			t.Errorf("agent page not served at the origin's root:\n%s", page)
		}
	})

	t.Run("the app sees the main host, and a same-origin Origin to match", func(t *testing.T) {
		for origin, want := range map[string]string{"http://" + aliceHost: "http://" + testHost, "http://evil.test": "http://evil.test"} {
			resp := p.getAt(1, aliceHost, "/api/echo", map[string]string{"Cookie": originCookie(alice.origin), "Origin": origin})
			e := echo(t, resp)
			if e.Host != testHost || strings.Join(e.Headers["Origin"], ",") != want || strings.Join(e.Headers["X-Forwarded-Host"], ",") != aliceHost {
				t.Errorf("Origin %s: app saw Host %q, Origin %q, X-Forwarded-Host %q; want %q, %q, %q",
					origin, e.Host, e.Headers["Origin"], e.Headers["X-Forwarded-Host"], testHost, want, aliceHost)
			}
		}
		for i := range p.nodes {
			d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
			hdr := http.Header{"Cookie": {originCookie(alice.origin)}, "Host": {aliceHost}, "Origin": {"http://" + aliceHost}}
			c, _, err := d.DialContext(context.Background(), "ws://"+p.nodes[i].addr+"/api/ws", hdr)
			if err != nil {
				t.Fatalf("WebSocket through node %d: %v", i, err)
			}
			echoes(t, c, fmt.Sprintf("through node %d", i))
			c.Close()
		}
	})

	t.Run("entry codes are single-use, short-lived, and bound to user and origin", func(t *testing.T) {
		for _, tt := range []struct {
			name  string
			entry func() (host string, u *url.URL)
			state string // the redeeming browser's entry state; "" means the minting browser's
		}{
			{"reused", func() (string, *url.URL) {
				u := p.mint(0, "alice", alice.session, "/")
				if resp := p.redeem(0, aliceHost, u); resp.StatusCode != http.StatusSeeOther {
					t.Fatalf("first use: %d", resp.StatusCode)
				}
				return aliceHost, u
			}, ""},
			{"expired", func() (string, *url.URL) {
				// Minted so long ago that it is past its exp and every leeway.
				p.authClock.Advance(-e2eEntryCodeAge)
				defer p.authClock.Advance(e2eEntryCodeAge)
				return aliceHost, p.mint(0, "alice", alice.session, "/")
			}, ""},
			{"another user's code", func() (string, *url.URL) { return aliceHost, p.mint(1, "bob", bob.session, "/") }, ""},
			{"another user's origin", func() (string, *url.URL) { return bobHost, p.mint(0, "alice", alice.session, "/") }, ""},
			{"another origin of the user", func() (string, *url.URL) {
				return aliceHost + ":8443", p.mint(0, "alice", alice.session, "/")
			}, ""},
			{"another browser's state", func() (string, *url.URL) { return aliceHost, p.mint(0, "alice", alice.session, "/") },
				"c3RhdGUgb2YgYW5vdGhlciBicm93c2VyLCBib2IhISE"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				host, u := tt.entry()
				state := cmp.Or(tt.state, e2eEntryState)
				resp := p.redeemWith(1, host, u, state)
				body := readAll(t, resp)
				if resp.StatusCode != http.StatusUnauthorized || findCookie(resp, nodeproxy.DefaultOriginCookieName) != nil {
					t.Errorf("%d %q with cookie %q, want 401 and no session", resp.StatusCode, body, resp.Header.Get("Set-Cookie"))
				}
				if code := u.Query().Get("code"); strings.Contains(p.logs.String(), code) {
					t.Error("an entry code reached a log line")
				}
			})
		}
	})

	t.Run("credentials of one origin open no other", func(t *testing.T) {
		for _, tt := range []struct {
			name, host, cookie string
		}{
			{"main session cookie on the user origin", aliceHost, cookie(alice.session)},
			{"alice's origin session on bob's origin", bobHost, originCookie(alice.origin)},
			{"alice's origin session under another port", aliceHost + ":8443", originCookie(alice.origin)},
			{"alice's main session named as an origin session", aliceHost, originCookie(alice.session)},
		} {
			t.Run(tt.name, func(t *testing.T) {
				resp := p.getAt(0, tt.host, "/api/echo", map[string]string{"Cookie": tt.cookie})
				readAll(t, resp)
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("%d, want 401", resp.StatusCode)
				}
				nav := p.getAt(0, tt.host, "/notes?x=1", map[string]string{"Cookie": tt.cookie, "Accept": "text/html"})
				readAll(t, nav)
				user, _ := userorigin.UserOf(tt.host, e2eUserDomain)
				state := findCookie(nav, entryStateName)
				if state == nil {
					t.Fatalf("navigation: no entry state cookie in %q", nav.Header.Values("Set-Cookie"))
				}
				want := "http://" + testHost + "/u/" + user + "/notes?x=1&" + account.EntryStateParam + "=" + account.EntryStateBinding(state.Value)
				if nav.StatusCode != http.StatusSeeOther || nav.Header.Get("Location") != want {
					t.Errorf("navigation: %d to %q, want 303 to %q", nav.StatusCode, nav.Header.Get("Location"), want)
				}
			})
		}
		before := len(p.appRequests("alice"))
		resp := p.getAt(0, aliceHost, "/u/bob/api/echo", aliceOrigin)
		readAll(t, resp)
		if got := p.appRequests("alice")[before:]; len(got) != 1 || got[0] != "/u/bob/api/echo" {
			t.Errorf("on alice's origin /u/bob/ reached alice's app as %v (status %d)", got, resp.StatusCode)
		}
	})

	t.Run("an agent page's script cannot log out, recreate or delete", func(t *testing.T) {
		before := len(p.appRequests("alice"))
		for _, m := range []struct{ method, path string }{
			{http.MethodPost, "/logout"}, {http.MethodPost, "/recreate"}, {http.MethodDelete, "/users/alice"},
		} {
			// Same-origin: the user origin has no auth API behind it.
			resp := p.send(0, m.method, aliceHost, m.path, map[string]string{"Cookie": originCookie(alice.origin), "Origin": "http://" + aliceHost})
			readAll(t, resp)
			// Cross-origin to the main host: the browser adds the main
			// cookie (same site) and the user origin as Origin.
			resp = p.send(0, m.method, testHost, m.path, map[string]string{
				"Cookie": cookie(alice.session), "Origin": "http://" + aliceHost, "Content-Type": "application/x-www-form-urlencoded",
			})
			body := readAll(t, resp)
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s %s from the user origin: %d %q, want 403", m.method, m.path, resp.StatusCode, body)
			}
		}
		if got := p.appRequests("alice")[before:]; len(got) != 3 {
			t.Errorf("the same-origin requests reached the app as %v, want all three", got)
		}
		if resp := p.getAt(0, aliceHost, "/api/echo", aliceOrigin); resp.StatusCode != http.StatusOK {
			t.Errorf("origin session after the attempts: %d", resp.StatusCode)
		}
		p.mint(0, "alice", alice.session, "/")
	})

	t.Run("logout on the main origin ends the origin session", func(t *testing.T) {
		resp := p.send(0, http.MethodPost, testHost, "/logout", map[string]string{
			"Cookie": cookie(bob.session), "Origin": "http://" + testHost,
		})
		readAll(t, resp)
		if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("logout: %d", resp.StatusCode)
		}
		testkit.Eventually(t, "bob's origin session refused on every node", func() bool {
			for i := range p.nodes {
				resp := p.getAt(i, bobHost, "/api/echo", map[string]string{"Cookie": originCookie(bob.origin)})
				readAll(t, resp)
				if resp.StatusCode != http.StatusUnauthorized {
					return false
				}
			}
			return true
		})
	})
}

// userHost is user's origin host in the e2e platform.
func userHost(user string) string { return user + "." + e2eUserDomain }

func originCookie(tok string) string { return nodeproxy.DefaultOriginCookieName + "=" + tok }

// e2eEntryState is the test browser's entry state, as the user origin
// sets it before sending the browser to the main origin.
const e2eEntryState = "ZTJlIGVudHJ5IHN0YXRlIG9mIG9uZSBicm93c2VyLiE" // 32 bytes, base64url

// mint opens /u/<user><path> on the main host through node i with the main
// session and the binding of e2eEntryState, and returns the entry URL it
// is sent to.
func (p *platform) mint(i int, user, session, path string) *url.URL {
	p.t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	path += sep + account.EntryStateParam + "=" + account.EntryStateBinding(e2eEntryState)
	resp := p.get(i, "/u/"+user+path, map[string]string{"Cookie": cookie(session), "Accept": "text/html"})
	readAll(p.t, resp)
	u, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || err != nil || u.Host != userHost(user) || u.Path != userorigin.EnterPath || u.Query().Get("code") == "" {
		p.t.Fatalf("/u/%s%s on the main host: %d to %q, want 303 to an entry URL of %s", user, path, resp.StatusCode, resp.Header.Get("Location"), userHost(user))
	}
	if resp.Header.Get("Referrer-Policy") != "no-referrer" {
		p.t.Error("entry redirect without Referrer-Policy: no-referrer")
	}
	return u
}

// e2eEntryCodeAge is the age of an expired entry code: past its TTL and
// the clock leeway of the auth API and the node proxies (2 s each).
const e2eEntryCodeAge = e2eEntryCodeTTL + 3*time.Second

// redeem brings entry to host through node i, from the browser holding
// e2eEntryState.
func (p *platform) redeem(i int, host string, entry *url.URL) *http.Response {
	p.t.Helper()
	return p.redeemWith(i, host, entry, e2eEntryState)
}

// redeemWith brings entry to host through node i, from a browser holding
// state.
func (p *platform) redeemWith(i int, host string, entry *url.URL, state string) *http.Response {
	p.t.Helper()
	return p.getAt(i, host, entry.RequestURI(), map[string]string{"Accept": "text/html", "Cookie": entryStateName + "=" + state})
}

// enter mints an entry code for user and redeems it on the user's origin,
// returning the origin session.
func (p *platform) enter(i int, user, session, path string) string {
	p.t.Helper()
	resp := p.redeem(i, userHost(user), p.mint(i, user, session, path))
	readAll(p.t, resp)
	ck := findCookie(resp, nodeproxy.DefaultOriginCookieName)
	if resp.StatusCode != http.StatusSeeOther || ck == nil {
		p.t.Fatalf("entering %s: %d without an origin session", userHost(user), resp.StatusCode)
	}
	return ck.Value
}
