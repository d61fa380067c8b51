package browsertest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/requestpath/nodeproxy"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// Generous bounds: the machine may have two busy cores, and a signup or a
// recreate waits for a sandbox to become Ready.
const (
	stepTimeout  = 60 * time.Second
	agentTimeout = 120 * time.Second
)

// agentReady is true once the browser shows user's agent UI at its home
// (/u/<user>/, or the root of the user's origin), its script (a relative
// asset) having loaded the conversation.
func (s *session) agentReady(user string) string {
	return fmt.Sprintf(`location.href === %q && document.querySelector('#status')?.textContent.trim() === 'ready'`, s.p.agentURL(user, ""))
}

// landingAnonymous is true on the main origin's landing page with the
// signup and login forms.
func (s *session) landingAnonymous() string {
	return fmt.Sprintf(`location.href === %q && document.querySelector('form[action="/users"]') && document.querySelector('form[action="/login"]')`, s.url("/"))
}

// landingSignedIn is true on the main origin's landing page signed in as
// user.
func (s *session) landingSignedIn(user string) string {
	return fmt.Sprintf(`location.href === %q && document.querySelector('main strong')?.textContent === %q && document.querySelector('form[action="/logout"]')`, s.url("/"), user)
}

// TestBrowserFlows walks the user flows of issue 9 in headless Chromium
// against the full local platform, once per routing mode (issue 11), in
// order, each building on the last:
//  1. sign up through the landing page, see the bearer token once on
//     signup's own answer, follow its link into the agent UI (relative
//     assets, SSE, WebSocket); in subdomain routing the browser ends at the root of
//     the user's origin, whose host-only cookie is the only session there;
//  2. reload keeps the session, also after the session token expired and
//     was renewed;
//  3. the landing page never shows the token; log out (the agent no
//     longer opens: its path answers 401, or its origin sends the browser
//     to the anonymous landing page), log in again with the token;
//  4. a second user, in a separate browser context, cannot reach the first
//     user's agent by typed URL, nor by following a link on another site or
//     on the gateway's own landing page;
//     (subdomain routing only) a hostile page in the first user's agent
//     cannot log out, recreate or delete the account, read another user's
//     agent or the session cookies;
//  5. the agent, left idle, is suspended by the sweeper; opening it again
//     shows the waking page, then the agent with its earlier conversation;
//  6. recreate and delete from the landing page, with their confirmations;
//     recreate shows a new token once, the old one no longer logs in.
//
// Each mode has its own platform, browser and artifact directory.
func TestBrowserFlows(t *testing.T) {
	chromiumPath(t) // skip (or fail under CI) before starting anything
	for _, mode := range []userorigin.Mode{userorigin.Path, userorigin.Subdomain} {
		t.Run(string(mode), func(t *testing.T) { runFlows(t, mode) })
	}
}

// runFlows runs TestBrowserFlows' flows on a platform in routing mode.
func runFlows(t *testing.T, mode userorigin.Mode) {
	dir := artifactsDir(t)
	p := startPlatform(t, mode)
	browser := startBrowser(t, p)
	t.Logf("screenshots and logs: %s", dir)
	keepPlatformLog(t, dir, p)

	alice := newSession(t, browser, p, dir, "alice")
	var bearer string

	type flow struct {
		name string
		run  func(t *testing.T)
	}
	flows := []flow{
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
				return openAgent(ctx, alice, "alice", "alice's agent", alice.agentReady("alice"))
			})
		}},
	}
	if p.subdomain() {
		flows = append(flows, flow{"4h-hostile-agent-page", func(t *testing.T) { alice.t = t; hostileFlow(alice, p, "alice", "bob") }})
	}
	flows = append(flows,
		flow{"5-suspend-wake", func(t *testing.T) { alice.t = t; suspendWakeFlow(alice, p, "alice") }},
		flow{"6-recreate-delete", func(t *testing.T) { alice.t = t; recreateDeleteFlow(alice, "alice", bearer) }},
	)
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
		return until(ctx, "the signup form", s.landingAnonymous())
	})
	s.do("signup form filled", stepTimeout, func(ctx context.Context) error {
		return typeInto(ctx, `form[action="/users"] input[name="user"]`, user)
	})
	s.do("token page after signup", agentTimeout, func(ctx context.Context) error {
		if err := click(ctx, `form[action="/users"] button`); err != nil {
			return err
		}
		var err error
		token, err = readTokenPage(ctx, s, user)
		return err
	})
	s.do("agent UI from the token page", agentTimeout, func(ctx context.Context) error {
		return openAgentFromTokenPage(ctx, s, user)
	})
	if s.p.subdomain() {
		s.do("cookies kept per origin", stepTimeout, func(ctx context.Context) error {
			return originCookies(ctx, s, user)
		})
	}
	s.do("relative stylesheet loaded", stepTimeout, func(ctx context.Context) error {
		css := s.p.agentURL(user, "assets/app.css")
		return until(ctx, css+" applied", fmt.Sprintf(
			`[...document.styleSheets].some(s => s.href === %q && s.cssRules.length > 0)`, css))
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
		return postMessage(ctx, msg)
	})
	return token
}

// tokenPage is true on the page a signup, recreate or token rotation
// answers with: the new token, shown on this response alone, and a link
// on to user's agent.
func (s *session) tokenPage(user string) string {
	return fmt.Sprintf(`document.querySelector('.token pre') && document.querySelector('a.button[href="/u/%s/"]')`, user)
}

// readTokenPage waits for the token page and returns the token it shows.
func readTokenPage(ctx context.Context, s *session, user string) (string, error) {
	if err := until(ctx, "the token page", s.tokenPage(user)); err != nil {
		return "", err
	}
	token, err := eval[string](ctx, `document.querySelector('.token pre').textContent.trim()`)
	if err != nil {
		return "", err
	}
	if len(token) < 40 {
		return "", fmt.Errorf("%w: token %q is too short", errUnexpected, token)
	}
	return token, nil
}

// openAgentFromTokenPage follows the token page's link to user's agent.
func openAgentFromTokenPage(ctx context.Context, s *session, user string) error {
	if err := click(ctx, fmt.Sprintf(`a.button[href="/u/%s/"]`, user)); err != nil {
		return err
	}
	return until(ctx, user+"'s agent UI at "+s.p.agentURL(user, ""), s.agentReady(user))
}

// originCookies checks the browser's cookie jar after user entered their
// origin: the origin session is there, HttpOnly and host-only, and the main
// session cookie is not; on the main origin it is the other way round.
func originCookies(ctx context.Context, s *session, user string) error {
	origin, err := cookiesOf(ctx, s.p.agentURL(user, ""))
	if err != nil {
		return err
	}
	main, err := cookiesOf(ctx, s.url("/"))
	if err != nil {
		return err
	}
	oc := origin[nodeproxy.DefaultOriginCookieName]
	switch {
	case oc == nil:
		return fmt.Errorf("%w: no %s cookie on %s", errUnexpected, nodeproxy.DefaultOriginCookieName, s.p.agentURL(user, ""))
	case !oc.HTTPOnly || oc.Domain != user+"."+userDomain:
		return fmt.Errorf("%w: origin cookie HttpOnly=%v Domain=%q, want HttpOnly and host-only", errUnexpected, oc.HTTPOnly, oc.Domain)
	case origin[nodeproxy.DefaultCookieName] != nil:
		return fmt.Errorf("%w: the main session cookie reaches the user origin", errUnexpected)
	case main[nodeproxy.DefaultCookieName] == nil:
		return fmt.Errorf("%w: no main session cookie on the main origin", errUnexpected)
	case main[nodeproxy.DefaultOriginCookieName] != nil:
		return fmt.Errorf("%w: the origin session reaches the main origin", errUnexpected)
	}
	return nil
}

// reloadFlow reloads the agent UI, then waits past the session token's
// lifetime and reloads again: the node proxy renews the session.
func reloadFlow(s *session, p *platform, user string) {
	s.t.Helper()
	s.do("agent reopened", agentTimeout, func(ctx context.Context) error {
		return openAgent(ctx, s, user, "the agent", s.agentReady(user))
	})
	s.do("reload keeps the session", agentTimeout, func(ctx context.Context) error {
		code, err := reload(ctx)
		if err != nil {
			return err
		}
		if code != 200 {
			return fmt.Errorf("%w: agent answered %d after reload", errUnexpected, code)
		}
		return until(ctx, "the agent after reload", s.agentReady(user)+` && document.querySelector('#conversation').textContent.includes('remember this')`)
	})
	before := p.renewals()
	// Past the token's lifetime and the proxies' leeway, with the page's
	// streams closed so that nothing renews in the meantime.
	s.do("page left while the token expires", stepTimeout, func(ctx context.Context) error {
		if err := openLanding(ctx, s, "the landing page", s.landingSignedIn(user)); err != nil {
			return err
		}
		return s.awaitExpiry(ctx, user)
	})
	s.do("agent after token expiry", agentTimeout, func(ctx context.Context) error {
		if err := navigateWant(ctx, s.p.agentURL(user, ""), 200, "the agent after the token expired"); err != nil {
			return err
		}
		if err := until(ctx, "the agent after renewal", s.agentReady(user)); err != nil {
			return err
		}
		if after := p.renewals(); after <= before {
			return fmt.Errorf("%w: no session renewal counted (%v before, %v after)", errUnexpected, before, after)
		}
		return nil
	})
	s.do("reload after renewal", agentTimeout, func(ctx context.Context) error {
		if err := s.awaitExpiry(ctx, user); err != nil {
			return err
		}
		code, err := reload(ctx)
		if err != nil {
			return err
		}
		if code != 200 {
			return fmt.Errorf("%w: agent answered %d on reload after the renewed token expired", errUnexpected, code)
		}
		return until(ctx, "the agent after a second renewal", s.agentReady(user)+` && Number(document.querySelector('#event-count').textContent) >= 1`)
	})
}

// logoutLoginFlow checks the landing page never shows the bearer token
// (only signup's own response did), logs out, checks the agent path is
// closed, and logs in again with the token.
func logoutLoginFlow(s *session, user, token string) {
	s.t.Helper()
	s.do("landing never shows the token", stepTimeout, func(ctx context.Context) error {
		if err := openLanding(ctx, s, "the signed-in landing page", s.landingSignedIn(user)); err != nil {
			return err
		}
		shown, err := eval[bool](ctx, fmt.Sprintf(`!!document.querySelector('.token pre') || document.documentElement.outerHTML.includes(%q)`, token))
		if err != nil {
			return err
		}
		if shown {
			return fmt.Errorf("%w: the landing page shows the token", errUnexpected)
		}
		return nil
	})
	s.do("logged out", stepTimeout, func(ctx context.Context) error {
		if err := click(ctx, `form[action="/logout"] button`); err != nil {
			return err
		}
		return until(ctx, "the anonymous landing page", s.landingAnonymous())
	})
	s.do("agent closed after logout", stepTimeout, func(ctx context.Context) error {
		return agentClosed(ctx, s, user, "logout", func(code int64) bool { return code == 401 })
	})
	s.do("login form filled", stepTimeout, func(ctx context.Context) error {
		return fillLogin(ctx, s, user, token)
	})
	s.do("agent UI after login", agentTimeout, func(ctx context.Context) error {
		if err := click(ctx, `form[action="/login"] button`); err != nil {
			return err
		}
		return until(ctx, "the agent after login", s.agentReady(user)+` && document.querySelector('#conversation').textContent.includes('remember this')`)
	})
}

// openLanding opens the landing page and waits, naming what it waits
// for, until cond holds on it.
func openLanding(ctx context.Context, s *session, what, cond string) error {
	if _, err := navigate(ctx, s, "/"); err != nil {
		return err
	}
	return until(ctx, what, cond)
}

// openAgent opens user's agent and waits, naming what it waits for, until
// cond holds on it.
func openAgent(ctx context.Context, s *session, user, what, cond string) error {
	if _, err := navigateURL(ctx, s.p.agentURL(user, "")); err != nil {
		return err
	}
	return until(ctx, what, cond)
}

// signUp signs user up through the anonymous landing page's form and
// returns the token its answer shows.
func signUp(ctx context.Context, s *session, user string) (string, error) {
	if err := openLanding(ctx, s, "the signup form", s.landingAnonymous()); err != nil {
		return "", err
	}
	if err := typeInto(ctx, `form[action="/users"] input[name="user"]`, user); err != nil {
		return "", err
	}
	if err := click(ctx, `form[action="/users"] button`); err != nil {
		return "", err
	}
	return readTokenPage(ctx, s, user)
}

// agentClosed checks that user's agent is closed to the browser after
// event: in subdomain routing its origin is; in path routing /u/<user>/
// answers with a code refused accepts and no agent UI.
func agentClosed(ctx context.Context, s *session, user, event string, refused func(code int64) bool) error {
	if s.p.subdomain() {
		return originClosed(ctx, s, user)
	}
	code, err := navigate(ctx, s, "/u/"+user+"/")
	if err != nil {
		return err
	}
	if !refused(code) {
		return fmt.Errorf("%w: /u/%s/ answered %d after %s", errUnexpected, user, code, event)
	}
	open, err := eval[bool](ctx, `!!document.querySelector('#status')`)
	if err != nil {
		return err
	}
	if open {
		return fmt.Errorf("%w: the agent UI opened after %s", errUnexpected, event)
	}
	return nil
}

// fillLogin opens the anonymous landing page and fills its login form.
func fillLogin(ctx context.Context, s *session, user, token string) error {
	if err := openLanding(ctx, s, "the login form", s.landingAnonymous()); err != nil {
		return err
	}
	if err := typeInto(ctx, `form[action="/login"] input[name="user"]`, user); err != nil {
		return err
	}
	return typeInto(ctx, `form[action="/login"] input[name="token"]`, token)
}

// submitLogin fills the landing page's login form and submits it.
func submitLogin(ctx context.Context, s *session, user, token string) error {
	if err := fillLogin(ctx, s, user, token); err != nil {
		return err
	}
	return click(ctx, `form[action="/login"] button`)
}

// loginRefused logs in as user with token through the landing page and
// expects the refusal page.
func loginRefused(ctx context.Context, s *session, user, token string) error {
	if err := submitLogin(ctx, s, user, token); err != nil {
		return err
	}
	return until(ctx, "a refused login", fmt.Sprintf(`document.readyState === 'complete' && location.origin === %q && location.pathname !== '/u/%s/' && !!document.querySelector('.error')`, s.p.mainOrigin(), user))
}

// suspendWakeFlow posts a message, leaves the agent idle until the sweeper
// suspends it, and opens it again: the waking page, then the agent with
// the whole conversation, from before and during this flow.
func suspendWakeFlow(s *session, p *platform, user string) {
	s.t.Helper()
	msg := "before the nap, " + user
	s.do("message posted before the suspend", agentTimeout, func(ctx context.Context) error {
		if err := openAgent(ctx, s, user, "the agent", s.agentReady(user)); err != nil {
			return err
		}
		return postMessage(ctx, msg)
	})
	// The agent page's streams are requests in flight, which keep the
	// sandbox awake: leave it.
	s.do("agent left", stepTimeout, func(ctx context.Context) error {
		return openLanding(ctx, s, "the landing page", s.landingSignedIn(user))
	})
	// The sweeper runs only until the suspend: left running, it could
	// suspend the woken agent again before the waking page's next reload.
	stop := p.sweep(s.t)
	s.do("agent suspended while idle", agentTimeout, func(ctx context.Context) error {
		return p.waitSuspended(ctx, user)
	})
	stop()
	s.do("waking page", stepTimeout, func(ctx context.Context) error {
		if err := navigateWant(ctx, s.p.agentURL(user, ""), 503, "the suspended agent (the waking page)"); err != nil {
			return err
		}
		return until(ctx, "the waking page", `document.title === 'Waking your agent' && document.querySelector('meta[http-equiv="refresh"]')`)
	})
	s.do("agent woken with its conversation", agentTimeout, func(ctx context.Context) error {
		return until(ctx, "the woken agent with the earlier messages", s.agentReady(user)+fmt.Sprintf(
			` && document.querySelector('#conversation').textContent.includes(%q) && document.querySelector('#conversation').textContent.includes(%q)`,
			"remember this, "+user, msg))
	})
}

// recreateDeleteFlow recreates user's workspace, which shows a new token
// once and kills the old one, and then deletes the account, both through
// the landing page and its confirmation pages.
func recreateDeleteFlow(s *session, user, token string) {
	s.t.Helper()
	s.do("recreate confirmation", stepTimeout, func(ctx context.Context) error {
		if err := openLanding(ctx, s, "the signed-in landing page", s.landingSignedIn(user)); err != nil {
			return err
		}
		if err := click(ctx, `a[href="/recreate"]`); err != nil {
			return err
		}
		return until(ctx, "the recreate confirmation", `location.pathname === '/recreate' && document.querySelector('form[action="/recreate"] button.danger')`)
	})
	var fresh string
	s.do("token page after recreate", agentTimeout, func(ctx context.Context) error {
		if err := click(ctx, `form[action="/recreate"] button.danger`); err != nil {
			return err
		}
		var err error
		if fresh, err = readTokenPage(ctx, s, user); err != nil {
			return err
		}
		if fresh == token {
			return fmt.Errorf("%w: recreate kept the old token", errUnexpected)
		}
		return nil
	})
	s.do("recreated agent", agentTimeout, func(ctx context.Context) error {
		if err := openAgentFromTokenPage(ctx, s, user); err != nil {
			return err
		}
		// A fresh workspace: the earlier conversation is gone.
		return until(ctx, "an empty conversation", `!document.querySelector('#conversation').textContent.includes('remember this')`)
	})
	s.do("logged out after recreate", stepTimeout, func(ctx context.Context) error {
		if err := openLanding(ctx, s, "the signed-in landing page", s.landingSignedIn(user)); err != nil {
			return err
		}
		if err := click(ctx, `form[action="/logout"] button`); err != nil {
			return err
		}
		return until(ctx, "the anonymous landing page", s.landingAnonymous())
	})
	s.do("token from before the recreate refused", stepTimeout, func(ctx context.Context) error {
		return loginRefused(ctx, s, user, token)
	})
	s.do("login with the new token", agentTimeout, func(ctx context.Context) error {
		if err := submitLogin(ctx, s, user, fresh); err != nil {
			return err
		}
		return until(ctx, "the agent after login", s.agentReady(user))
	})
	s.do("delete confirmation", stepTimeout, func(ctx context.Context) error {
		if err := openLanding(ctx, s, "the signed-in landing page", s.landingSignedIn(user)); err != nil {
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
		return until(ctx, "the anonymous landing page", s.landingAnonymous())
	})
	s.do("agent gone after delete", stepTimeout, func(ctx context.Context) error {
		return agentClosed(ctx, s, user, "delete", func(code int64) bool { return code >= 400 })
	})
	s.do("token refused after delete", stepTimeout, func(ctx context.Context) error {
		return loginRefused(ctx, s, user, fresh)
	})
}

// postMessage sends msg from the open agent UI and waits until the
// conversation shows it.
func postMessage(ctx context.Context, msg string) error {
	if err := typeInto(ctx, "#message-text", msg); err != nil {
		return err
	}
	if err := click(ctx, "#message-send"); err != nil {
		return err
	}
	return until(ctx, "the message in the conversation", fmt.Sprintf(`document.querySelector('#conversation').textContent.includes(%q)`, msg))
}
