package browsertest

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Generous bounds: the machine may have two busy cores, and a signup or a
// recreate waits for a sandbox to become Ready.
const (
	stepTimeout  = 60 * time.Second
	agentTimeout = 120 * time.Second
)

// agentReady is true once the browser shows user's agent UI, its script
// (a relative asset) having loaded the conversation.
func agentReady(user string) string {
	return fmt.Sprintf(`location.pathname === %q && document.querySelector('#status')?.textContent.trim() === 'ready'`, "/u/"+user+"/")
}

// landingAnonymous is true on the landing page with the signup and login
// forms.
const landingAnonymous = `location.pathname === '/' && document.querySelector('form[action="/users"]') && document.querySelector('form[action="/login"]')`

func landingSignedIn(user string) string {
	return fmt.Sprintf(`location.pathname === '/' && document.querySelector('main strong')?.textContent === %q && document.querySelector('form[action="/logout"]')`, user)
}

// TestBrowserFlows walks the user flows of issue 9 in headless Chromium
// against the full local platform, in order, each building on the last:
//  1. sign up through the landing page into the agent UI (relative assets,
//     SSE, WebSocket);
//  2. reload keeps the session, also after the session token expired and
//     was renewed;
//  3. log out (the agent path answers 401), log in again with the bearer
//     token the landing page showed once;
//  4. a second user, in a separate browser context, cannot reach the first
//     user's path by typed URL, nor by following a link on another site or
//     on the gateway's own landing page;
//  5. the agent, left idle, is suspended by the sweeper; opening it again
//     shows the waking page, then the agent with its earlier conversation;
//  6. recreate and delete from the landing page, with their confirmations.
func TestBrowserFlows(t *testing.T) {
	chromiumPath(t) // skip (or fail under CI) before starting anything
	dir := artifactsDir(t)
	p := startPlatform(t)
	browser := startBrowser(t, p)
	t.Logf("screenshots and logs: %s", dir)
	t.Cleanup(func() {
		if t.Failed() {
			_ = writeFile(dir, "platform.log", p.logs.Bytes())
		}
	})

	alice := newSession(t, browser, p, dir, "alice")
	var bearer string

	flows := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"1-signup-sse-websocket", func(t *testing.T) { alice.t = t; bearer = signupFlow(alice, "alice") }},
		{"2-reload-and-renewal", func(t *testing.T) { alice.t = t; reloadFlow(alice, p, "alice") }},
		{"3-logout-login", func(t *testing.T) { alice.t = t; logoutLoginFlow(alice, "alice", bearer) }},
		{"4-second-user-isolated", func(t *testing.T) {
			bob := newSession(t, browser, p, dir, "bob")
			signupFlow(bob, "bob")
			isolationFlow(bob, "alice")
			linkIsolationFlow(bob, "alice")
			alice.t = t
			alice.do("alice still reaches her agent", agentTimeout, func(ctx context.Context) error {
				if _, err := navigate(ctx, alice, "/u/alice/"); err != nil {
					return err
				}
				return until(ctx, "alice's agent", agentReady("alice"))
			})
		}},
		{"5-suspend-wake", func(t *testing.T) { alice.t = t; suspendWakeFlow(alice, p, "alice") }},
		{"6-recreate-delete", func(t *testing.T) { alice.t = t; recreateDeleteFlow(alice, "alice", bearer) }},
	}
	for _, f := range flows {
		if !t.Run(f.name, f.run) {
			t.Fatalf("flow %s failed; the later flows build on it and are not run", f.name)
		}
	}
}

// signupFlow signs user up through the landing page form and checks the
// agent UI it lands in: assets, SSE and WebSocket.
func signupFlow(s *session, user string) (token string) {
	s.t.Helper()
	s.do("landing page", stepTimeout, func(ctx context.Context) error {
		code, err := navigate(ctx, s, "/")
		if err != nil {
			return err
		}
		if code != 200 {
			return fmt.Errorf("%w: landing page answered %d", errUnexpected, code)
		}
		return until(ctx, "the signup form", landingAnonymous)
	})
	s.do("signup form filled", stepTimeout, func(ctx context.Context) error {
		return typeInto(ctx, `form[action="/users"] input[name="user"]`, user)
	})
	s.do("agent UI after signup", agentTimeout, func(ctx context.Context) error {
		if err := click(ctx, `form[action="/users"] button`); err != nil {
			return err
		}
		return until(ctx, user+"'s agent UI at /u/"+user+"/", agentReady(user))
	})
	s.do("relative stylesheet loaded", stepTimeout, func(ctx context.Context) error {
		return until(ctx, "assets/app.css applied under /u/"+user+"/", fmt.Sprintf(
			`[...document.styleSheets].some(s => s.href && new URL(s.href).pathname === %q && s.cssRules.length > 0)`,
			"/u/"+user+"/assets/app.css"))
	})
	s.do("SSE events arrive", stepTimeout, func(ctx context.Context) error {
		if err := until(ctx, "a first SSE event", `Number(document.querySelector('#event-count').textContent) >= 1`); err != nil {
			return err
		}
		n, err := eval[string](ctx, `document.querySelector('#event-count').textContent`)
		if err != nil {
			return err
		}
		first, _ := strconv.Atoi(strings.TrimSpace(n))
		return until(ctx, "the SSE event count to grow past "+n, fmt.Sprintf(`Number(document.querySelector('#event-count').textContent) > %d`, first))
	})
	s.do("WebSocket echo", stepTimeout, func(ctx context.Context) error {
		if err := until(ctx, "the page's hello echoed", `document.querySelector('#ws-status').textContent === 'open' && document.querySelector('#ws-echo').textContent.includes('hello from the page')`); err != nil {
			return err
		}
		msg := "ping from chromium " + user
		if err := typeInto(ctx, "#ws-text", msg); err != nil {
			return err
		}
		if err := click(ctx, "#ws-send"); err != nil {
			return err
		}
		return until(ctx, "our text echoed", fmt.Sprintf(`document.querySelector('#ws-echo').textContent.includes(%q)`, msg))
	})
	s.do("message posted", stepTimeout, func(ctx context.Context) error {
		msg := "remember this, " + user
		if err := typeInto(ctx, "#message-text", msg); err != nil {
			return err
		}
		if err := click(ctx, "#message-send"); err != nil {
			return err
		}
		return until(ctx, "the message in the conversation", fmt.Sprintf(`document.querySelector('#conversation').textContent.includes(%q)`, msg))
	})
	s.do("landing shows the token once", stepTimeout, func(ctx context.Context) error {
		// The flash cookie set at signup: the first visit of the landing
		// page after signup shows the token.
		if _, err := navigate(ctx, s, "/"); err != nil {
			return err
		}
		if err := until(ctx, "the signed-in landing page with the token", landingSignedIn(user)+` && document.querySelector('.token pre')`); err != nil {
			return err
		}
		var err error
		token, err = eval[string](ctx, `document.querySelector('.token pre').textContent.trim()`)
		if err != nil {
			return err
		}
		if len(token) < 20 {
			return fmt.Errorf("%w: token %q is too short", errUnexpected, token)
		}
		return nil
	})
	return token
}

// reloadFlow reloads the agent UI, then waits past the session token's
// lifetime and reloads again: the node proxy renews the session.
func reloadFlow(s *session, p *platform, user string) {
	s.t.Helper()
	s.do("agent reopened", agentTimeout, func(ctx context.Context) error {
		if _, err := navigate(ctx, s, "/u/"+user+"/"); err != nil {
			return err
		}
		return until(ctx, "the agent", agentReady(user))
	})
	s.do("reload keeps the session", agentTimeout, func(ctx context.Context) error {
		code, err := reload(ctx)
		if err != nil {
			return err
		}
		if code != 200 {
			return fmt.Errorf("%w: agent answered %d after reload", errUnexpected, code)
		}
		return until(ctx, "the agent after reload", agentReady(user)+` && document.querySelector('#conversation').textContent.includes('remember this')`)
	})
	before := p.renewals()
	// Past the token's lifetime and the proxies' leeway, with the page's
	// streams closed so that nothing renews in the meantime.
	s.do("page left while the token expires", stepTimeout, func(ctx context.Context) error {
		if _, err := navigate(ctx, s, "/"); err != nil {
			return err
		}
		return until(ctx, "the landing page", landingSignedIn(user))
	})
	time.Sleep(sessionTTL + verifierLeeway + 2*time.Second)
	s.do("agent after token expiry", agentTimeout, func(ctx context.Context) error {
		code, err := navigate(ctx, s, "/u/"+user+"/")
		if err != nil {
			return err
		}
		if code != 200 {
			return fmt.Errorf("%w: agent answered %d after the token expired", errUnexpected, code)
		}
		if err := until(ctx, "the agent after renewal", agentReady(user)); err != nil {
			return err
		}
		if after := p.renewals(); after <= before {
			return fmt.Errorf("%w: no session renewal counted (%v before, %v after)", errUnexpected, before, after)
		}
		return nil
	})
	s.do("reload after renewal", agentTimeout, func(ctx context.Context) error {
		time.Sleep(sessionTTL + verifierLeeway + time.Second)
		code, err := reload(ctx)
		if err != nil {
			return err
		}
		if code != 200 {
			return fmt.Errorf("%w: agent answered %d on reload after the renewed token expired", errUnexpected, code)
		}
		return until(ctx, "the agent after a second renewal", agentReady(user)+` && Number(document.querySelector('#event-count').textContent) >= 1`)
	})
}

// logoutLoginFlow reads the bearer token the landing page shows once after
// signup, logs out, checks the agent path is closed, and logs in again
// with the token. It returns the token.
func logoutLoginFlow(s *session, user, token string) {
	s.t.Helper()
	s.do("landing shows the token only once", stepTimeout, func(ctx context.Context) error {
		if _, err := navigate(ctx, s, "/"); err != nil {
			return err
		}
		if err := until(ctx, "the signed-in landing page", landingSignedIn(user)); err != nil {
			return err
		}
		shown, err := eval[bool](ctx, `!!document.querySelector('.token pre')`)
		if err != nil {
			return err
		}
		if shown {
			return fmt.Errorf("%w: the token is shown a second time", errUnexpected)
		}
		return nil
	})
	s.do("logged out", stepTimeout, func(ctx context.Context) error {
		if err := click(ctx, `form[action="/logout"] button`); err != nil {
			return err
		}
		return until(ctx, "the anonymous landing page", landingAnonymous)
	})
	s.do("agent closed after logout", stepTimeout, func(ctx context.Context) error {
		code, err := navigate(ctx, s, "/u/"+user+"/")
		if err != nil {
			return err
		}
		if code != 401 {
			return fmt.Errorf("%w: /u/%s/ answered %d after logout, want 401", errUnexpected, user, code)
		}
		open, err := eval[bool](ctx, `!!document.querySelector('#status')`)
		if err != nil {
			return err
		}
		if open {
			return fmt.Errorf("%w: the agent UI opened after logout", errUnexpected)
		}
		return nil
	})
	s.do("login form filled", stepTimeout, func(ctx context.Context) error {
		if _, err := navigate(ctx, s, "/"); err != nil {
			return err
		}
		if err := until(ctx, "the login form", landingAnonymous); err != nil {
			return err
		}
		if err := typeInto(ctx, `form[action="/login"] input[name="user"]`, user); err != nil {
			return err
		}
		return typeInto(ctx, `form[action="/login"] input[name="token"]`, token)
	})
	s.do("agent UI after login", agentTimeout, func(ctx context.Context) error {
		if err := click(ctx, `form[action="/login"] button`); err != nil {
			return err
		}
		return until(ctx, "the agent after login", agentReady(user)+` && document.querySelector('#conversation').textContent.includes('remember this')`)
	})
}

// isolationFlow checks that s's user cannot open other's agent by typed URL.
func isolationFlow(s *session, other string) {
	s.t.Helper()
	for _, path := range []string{"/u/" + other + "/", "/u/" + other + "/api/events", "/u/" + other + "/assets/app.js"} {
		s.do("typed URL "+path, stepTimeout, func(ctx context.Context) error {
			code, err := navigate(ctx, s, path)
			if err != nil {
				return err
			}
			if code < 400 {
				return fmt.Errorf("%w: %s answered %d to another user, want an error", errUnexpected, path, code)
			}
			s.t.Logf("%s's typed URL %s: %d", s.name, path, code)
			return notLeaked(ctx, path)
		})
	}
}

// linkIsolationFlow checks that s's user cannot open other's agent by
// following a link: one on a page of another site and one on the gateway's
// own landing page. The other site's link to the user's own agent opens
// it, so the session cookie does go along on such a navigation.
func linkIsolationFlow(s *session, other string) {
	s.t.Helper()
	path := "/u/" + other + "/"
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>elsewhere</title>
<p><a id="other-agent" href="%s">%s's agent</a></p>
<p><a id="own-agent" href="%s">%s's agent</a></p>`,
			html.EscapeString(s.url(path)), html.EscapeString(other),
			html.EscapeString(s.url("/u/"+s.name+"/")), html.EscapeString(s.name))
	}))
	s.t.Cleanup(site.Close)
	openSite := func(ctx context.Context) error {
		if _, err := chromedp.RunResponse(ctx, chromedp.Navigate(site.URL)); err != nil {
			return fmt.Errorf("navigate to the other site: %w", err)
		}
		return until(ctx, "the links", `document.querySelector('#other-agent') && document.querySelector('#own-agent')`)
	}
	s.do("links on another site", stepTimeout, openSite)
	s.do("followed the other site's link", stepTimeout, func(ctx context.Context) error {
		return followDenied(ctx, s, "#other-agent", path)
	})
	s.do("own agent by the other site's link", agentTimeout, func(ctx context.Context) error {
		if err := openSite(ctx); err != nil {
			return err
		}
		if err := click(ctx, "#own-agent"); err != nil {
			return err
		}
		return until(ctx, s.name+"'s own agent", agentReady(s.name))
	})
	s.do("link on the landing page", stepTimeout, func(ctx context.Context) error {
		if _, err := navigate(ctx, s, "/"); err != nil {
			return err
		}
		if err := until(ctx, "the signed-in landing page", landingSignedIn(s.name)); err != nil {
			return err
		}
		link := fmt.Sprintf(`<p><a id="other-agent" href="%s">%s's agent</a></p>`, html.EscapeString(path), html.EscapeString(other))
		_, err := eval[bool](ctx, fmt.Sprintf(`document.querySelector('main').insertAdjacentHTML('beforeend', %q), true`, link))
		return err
	})
	s.do("followed the landing page's link", stepTimeout, func(ctx context.Context) error {
		return followDenied(ctx, s, "#other-agent", path)
	})
}

// followDenied clicks the link sel to path and checks that the gateway
// refused it without showing another user's agent.
func followDenied(ctx context.Context, s *session, sel, path string) error {
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
	if err != nil {
		return fmt.Errorf("follow %s: %w", sel, err)
	}
	at, err := eval[string](ctx, `location.href`)
	if err != nil {
		return err
	}
	if at != s.url(path) {
		return fmt.Errorf("%w: the link led to %s, not to %s", errUnexpected, at, s.url(path))
	}
	if resp.Status < 400 {
		return fmt.Errorf("%w: %s answered %d to another user's link, want an error", errUnexpected, path, resp.Status)
	}
	s.t.Logf("%s followed a link to %s: %d", s.name, path, resp.Status)
	return notLeaked(ctx, path)
}

// notLeaked checks that the page shows nothing of another user's agent.
func notLeaked(ctx context.Context, path string) error {
	leaked, err := eval[bool](ctx, `!!document.querySelector('#status') || document.body.innerText.includes('remember this')`)
	if err != nil {
		return err
	}
	if leaked {
		return fmt.Errorf("%w: %s showed the other user's agent", errUnexpected, path)
	}
	return nil
}

// suspendWakeFlow posts a message, leaves the agent idle until the sweeper
// suspends it, and opens it again: the waking page, then the agent with
// the whole conversation, from before and during this flow.
func suspendWakeFlow(s *session, p *platform, user string) {
	s.t.Helper()
	msg := "before the nap, " + user
	s.do("message posted before the suspend", agentTimeout, func(ctx context.Context) error {
		if _, err := navigate(ctx, s, "/u/"+user+"/"); err != nil {
			return err
		}
		if err := until(ctx, "the agent", agentReady(user)); err != nil {
			return err
		}
		if err := typeInto(ctx, "#message-text", msg); err != nil {
			return err
		}
		if err := click(ctx, "#message-send"); err != nil {
			return err
		}
		return until(ctx, "the message in the conversation", fmt.Sprintf(`document.querySelector('#conversation').textContent.includes(%q)`, msg))
	})
	// The agent page's streams are requests in flight, which keep the
	// sandbox awake: leave it.
	s.do("agent left", stepTimeout, func(ctx context.Context) error {
		if _, err := navigate(ctx, s, "/"); err != nil {
			return err
		}
		return until(ctx, "the landing page", landingSignedIn(user))
	})
	// The sweeper runs only until the suspend: left running, it could
	// suspend the woken agent again before the waking page's next reload.
	stop := p.sweep(s.t)
	s.do("agent suspended while idle", agentTimeout, func(ctx context.Context) error {
		return p.waitSuspended(ctx, user)
	})
	stop()
	s.do("waking page", stepTimeout, func(ctx context.Context) error {
		code, err := navigate(ctx, s, "/u/"+user+"/")
		if err != nil {
			return err
		}
		if code != 503 {
			return fmt.Errorf("%w: the suspended agent answered %d, want 503 with the waking page", errUnexpected, code)
		}
		return until(ctx, "the waking page", `document.title === 'Waking your agent' && document.querySelector('meta[http-equiv="refresh"]')`)
	})
	s.do("agent woken with its conversation", agentTimeout, func(ctx context.Context) error {
		return until(ctx, "the woken agent with the earlier messages", agentReady(user)+fmt.Sprintf(
			` && document.querySelector('#conversation').textContent.includes(%q) && document.querySelector('#conversation').textContent.includes(%q)`,
			"remember this, "+user, msg))
	})
}

// recreateDeleteFlow recreates user's workspace and then deletes the
// account, both through the landing page and its confirmation pages.
func recreateDeleteFlow(s *session, user, token string) {
	s.t.Helper()
	s.do("recreate confirmation", stepTimeout, func(ctx context.Context) error {
		if _, err := navigate(ctx, s, "/"); err != nil {
			return err
		}
		if err := until(ctx, "the signed-in landing page", landingSignedIn(user)); err != nil {
			return err
		}
		if err := click(ctx, `a[href="/recreate"]`); err != nil {
			return err
		}
		return until(ctx, "the recreate confirmation", `location.pathname === '/recreate' && document.querySelector('form[action="/recreate"] button.danger')`)
	})
	s.do("recreated agent", agentTimeout, func(ctx context.Context) error {
		if err := click(ctx, `form[action="/recreate"] button.danger`); err != nil {
			return err
		}
		if err := until(ctx, "the fresh agent", agentReady(user)); err != nil {
			return err
		}
		// A fresh workspace: the earlier conversation is gone.
		return until(ctx, "an empty conversation", `!document.querySelector('#conversation').textContent.includes('remember this')`)
	})
	s.do("delete confirmation", stepTimeout, func(ctx context.Context) error {
		if _, err := navigate(ctx, s, "/"); err != nil {
			return err
		}
		if err := until(ctx, "the signed-in landing page", landingSignedIn(user)); err != nil {
			return err
		}
		if err := click(ctx, fmt.Sprintf(`a[href="/users/%s/delete"]`, user)); err != nil {
			return err
		}
		sel := fmt.Sprintf(`form[action="/users/%s/delete"]`, user)
		if err := until(ctx, "the delete confirmation", `document.querySelector('`+sel+` input[name="confirm"]')`); err != nil {
			return err
		}
		return typeInto(ctx, sel+` input[name="confirm"]`, user)
	})
	s.do("account deleted", agentTimeout, func(ctx context.Context) error {
		if err := click(ctx, fmt.Sprintf(`form[action="/users/%s/delete"] button.danger`, user)); err != nil {
			return err
		}
		return until(ctx, "the anonymous landing page", landingAnonymous)
	})
	s.do("agent gone after delete", stepTimeout, func(ctx context.Context) error {
		code, err := navigate(ctx, s, "/u/"+user+"/")
		if err != nil {
			return err
		}
		if code < 400 {
			return fmt.Errorf("%w: /u/%s/ answered %d after delete", errUnexpected, user, code)
		}
		return nil
	})
	s.do("old token refused after delete", stepTimeout, func(ctx context.Context) error {
		if _, err := navigate(ctx, s, "/"); err != nil {
			return err
		}
		if err := until(ctx, "the login form", landingAnonymous); err != nil {
			return err
		}
		if err := typeInto(ctx, `form[action="/login"] input[name="user"]`, user); err != nil {
			return err
		}
		if err := typeInto(ctx, `form[action="/login"] input[name="token"]`, token); err != nil {
			return err
		}
		if err := click(ctx, `form[action="/login"] button`); err != nil {
			return err
		}
		return until(ctx, "a refused login", `document.readyState === 'complete' && location.pathname !== '/u/`+user+`/' && !!document.querySelector('.error')`)
	})
}
