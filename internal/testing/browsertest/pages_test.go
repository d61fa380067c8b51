package browsertest

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/requestpath/nodeproxy"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// TestBrowserPages shows every page a person meets (issue 25) in headless
// Chromium against the full local platform, once per routing mode, each
// with a screenshot at full width and at 360 px and an axe-core
// accessibility check: the landing page, the token page after a browser
// signup, the account home, the 404 and 403 pages (a signed-in user on
// another user's path gets 403 and a link to their own agent), the waking
// page (shown well before WAKE_TIMEOUT, and moving on to the agent by
// itself once it is Ready), the token page after a rotation, the 401 page
// and the 429 page. On the way it shows that rotation kills the old token
// on every node, and that "sign out of all browsers" ends every session on
// every node while the claim, the workspace and the token stay.
func TestBrowserPages(t *testing.T) {
	chromiumPath(t)
	for _, mode := range []userorigin.Mode{userorigin.Path, userorigin.Subdomain} {
		t.Run(string(mode), func(t *testing.T) { runPages(t, mode) })
	}
}

func runPages(t *testing.T, mode userorigin.Mode) {
	dir := artifactsDir(t)
	axeAvailable(t)
	p := startPlatform(t, mode)
	browser := startBrowser(t, p)
	t.Logf("screenshots: %s", dir)
	keepPlatformLog(t, dir, p)
	const user = "carol"
	s := newSession(t, browser, p, dir, user)

	s.do("landing page", stepTimeout, func(ctx context.Context) error {
		return openLanding(ctx, s, "the anonymous landing page", s.landingAnonymous())
	})
	s.checkPage("landing page")

	var token string
	s.do("token page after signup", stepTimeout, func(ctx context.Context) error {
		if err := typeInto(ctx, `form[action="/users"] input[name="user"]`, user); err != nil {
			return err
		}
		if err := click(ctx, `form[action="/users"] button`); err != nil {
			return err
		}
		var err error
		token, err = readTokenPage(ctx, s, user)
		return err
	})
	s.checkPage("token page")
	s.do("agent from the token page", agentTimeout, func(ctx context.Context) error {
		return openAgentFromTokenPage(ctx, s, user)
	})

	s.do("account home", stepTimeout, func(ctx context.Context) error {
		return openLanding(ctx, s, "the account home", s.landingSignedIn(user)+
			` && document.querySelector('.state').textContent === 'Ready'`+
			fmt.Sprintf(` && document.querySelector('form[action="/users/%s/token"]') && document.querySelector('form[action="/users/%s/logout"]')`, user, user)+
			` && document.querySelector('a[href="/recreate"]') && document.querySelector('dl')`)
	})
	s.checkPage("account home")

	s.do("404 page", stepTimeout, func(ctx context.Context) error {
		return errorPage(ctx, s.url("/no-such-page"), 404, `a[href="/"]`)
	})
	s.checkPage("404 page")
	if !p.subdomain() {
		s.do("404 page of the node proxy", stepTimeout, func(ctx context.Context) error {
			return errorPage(ctx, s.url("/u/-x/"), 404, `a[href="/"]`)
		})
		s.checkPage("node proxy 404 page")
	}
	s.do("403 page on another user's path", stepTimeout, func(ctx context.Context) error {
		return errorPage(ctx, p.agentURL("nobody", ""), 403, fmt.Sprintf(`a[href$="/u/%s/"]`, user))
	})
	s.checkPage("403 page")

	wakingPageFlow(s, p, user)

	var fresh string
	s.do("token page after rotation", stepTimeout, func(ctx context.Context) error {
		if err := openLanding(ctx, s, "the account home", s.landingSignedIn(user)); err != nil {
			return err
		}
		if err := click(ctx, fmt.Sprintf(`form[action="/users/%s/token"] button`, user)); err != nil {
			return err
		}
		var err error
		if fresh, err = readTokenPage(ctx, s, user); err == nil && fresh == token {
			err = fmt.Errorf("%w: rotation showed the old token", errUnexpected)
		}
		return err
	})
	s.checkPage("token page after rotation")
	s.do("old token refused on every node", stepTimeout, func(ctx context.Context) error {
		if err := p.everyNode(ctx, p.agentURL(user, ""), map[string]string{"Authorization": "Bearer " + token}, http.StatusUnauthorized); err != nil {
			return err
		}
		return p.everyNode(ctx, p.agentURL(user, ""), map[string]string{"Authorization": "Bearer " + fresh}, http.StatusOK)
	})

	signOutEverywhereFlow(t, s, browser, p, dir, user, fresh)
	tooManyFlow(t, browser, p, dir, user)
}

// errorPage navigates to u and expects an error page with status code
// whose next step is a link matching sel.
func errorPage(ctx context.Context, u string, code int64, sel string) error {
	if err := navigateWant(ctx, u, code, u); err != nil {
		return err
	}
	return until(ctx, fmt.Sprintf("the %d page's link %s", code, sel), fmt.Sprintf(`document.querySelector('h1') && document.querySelector(%q)`, "main "+sel))
}

// wakingPageFlow lets the sweeper suspend user's agent, opens it: the
// waking page comes well before WAKE_TIMEOUT, and the agent opens by
// itself, with no click, once its sandbox is Ready again.
func wakingPageFlow(s *session, p *platform, user string) {
	s.t.Helper()
	s.do("agent left", stepTimeout, func(ctx context.Context) error {
		_, err := navigate(ctx, s, "/")
		return err
	})
	stop := p.sweep(s.t)
	s.do("agent suspended while idle", agentTimeout, func(ctx context.Context) error {
		return p.waitSuspended(ctx, user)
	})
	stop()
	var shown time.Time
	s.do("waking page", stepTimeout, func(ctx context.Context) error {
		start := time.Now()
		code, err := navigateURL(ctx, p.agentURL(user, ""))
		if err != nil {
			return err
		}
		took := time.Since(start)
		shown = time.Now()
		s.t.Logf("waking page after %v (WAKE_TIMEOUT %v)", took, wakeTimeout)
		if code != 503 {
			return fmt.Errorf("%w: the suspended agent answered %d, want 503 with the waking page", errUnexpected, code)
		}
		if took >= wakeTimeout {
			return fmt.Errorf("%w: the waking page came after %v, not before WAKE_TIMEOUT %v", errUnexpected, took, wakeTimeout)
		}
		return until(ctx, "the waking page", `document.title === 'Waking your agent' && document.querySelector('meta[http-equiv="refresh"]') && document.querySelector('dl')`)
	})
	s.checkPage("waking page")
	s.do("agent opened by itself", agentTimeout, func(ctx context.Context) error {
		if err := until(ctx, "the agent, opened by the waking page's reload", s.agentReady(user)); err != nil {
			return err
		}
		s.t.Logf("agent opened %v after the waking page", time.Since(shown).Round(100*time.Millisecond))
		return nil
	})
}

// signOutEverywhereFlow signs user in on a second browser, then signs out
// of all browsers from the first one's account home: both sessions end on
// every node, while the claim, the sandbox (the workspace) and the token
// stay; the second browser's next navigation gets the 401 page (path
// routing) or the anonymous landing page (subdomain routing).
func signOutEverywhereFlow(t *testing.T, s *session, browser context.Context, p *platform, dir, user, token string) {
	t.Helper()
	other := newSession(t, browser, p, dir, user+"-2")
	other.do("second browser signed in", agentTimeout, func(ctx context.Context) error {
		if err := submitLogin(ctx, other, user, token); err != nil {
			return err
		}
		return until(ctx, "the agent", other.agentReady(user))
	})
	var cookies []string
	other.do("second browser's session accepted on every node", stepTimeout, func(ctx context.Context) error {
		var err error
		if cookies, err = cookieHeaders(ctx, p, user); err != nil {
			return err
		}
		return p.everyNode(ctx, p.agentURL(user, ""), map[string]string{"Cookie": strings.Join(cookies, "; ")}, http.StatusOK)
	})
	claim, err := p.sb.SandboxClaims(p.ns).Get(t.Context(), "dsh-"+user, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := p.nodes[0].idx.Lookup(user)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := p.sb.Sandboxes(p.ns).Get(t.Context(), e.Route.Sandbox, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.do("signed out of all browsers", stepTimeout, func(ctx context.Context) error {
		if err := openLanding(ctx, s, "the account home", s.landingSignedIn(user)); err != nil {
			return err
		}
		if err := click(ctx, fmt.Sprintf(`form[action="/users/%s/logout"] button`, user)); err != nil {
			return err
		}
		return until(ctx, "the anonymous landing page", s.landingAnonymous())
	})
	s.do("every session ended on every node", stepTimeout, func(ctx context.Context) error {
		return p.everyNode(ctx, p.agentURL(user, ""), map[string]string{"Cookie": strings.Join(cookies, "; ")}, http.StatusUnauthorized)
	})
	s.do("claim, workspace and token kept", stepTimeout, func(ctx context.Context) error {
		c, err := p.sb.SandboxClaims(p.ns).Get(ctx, "dsh-"+user, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now, err := p.sb.Sandboxes(p.ns).Get(ctx, sb.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c.UID != claim.UID || now.UID != sb.UID {
			return fmt.Errorf("%w: claim %s -> %s, sandbox %s -> %s: replaced", errUnexpected, claim.UID, c.UID, sb.UID, now.UID)
		}
		return p.everyNode(ctx, p.agentURL(user, ""), map[string]string{"Authorization": "Bearer " + token}, http.StatusOK)
	})
	if p.subdomain() {
		other.do("second browser signed out", stepTimeout, func(ctx context.Context) error {
			return originClosed(ctx, other, user)
		})
		anon := newSession(t, browser, p, dir, "anonymous")
		anon.do("401 page", stepTimeout, func(ctx context.Context) error {
			return errorPage(ctx, p.agentURL(user, userorigin.EnterPath[1:]+"?code=x"), 401, `a[href^="`+p.mainOrigin()+`/"]`)
		})
		anon.checkPage("401 page")
		return
	}
	other.do("401 page", stepTimeout, func(ctx context.Context) error {
		// The sign-in link leads to the landing page, with the path
		// asked for as its deep link (next).
		return errorPage(ctx, p.agentURL(user, ""), 401, `a[href^="/"]`)
	})
	other.checkPage("401 page")
}

// tooManyFlow presents sessions signed by an unknown key until the node
// proxy refuses the client for a while: the 429 page.
func tooManyFlow(t *testing.T, browser context.Context, p *platform, dir, user string) {
	t.Helper()
	s := newSession(t, browser, p, dir, "unknown-key")
	name := nodeproxy.DefaultCookieName
	if p.subdomain() {
		name = nodeproxy.DefaultOriginCookieName
	}
	enc := base64.RawURLEncoding.EncodeToString
	forged := enc([]byte(`{"alg":"EdDSA","kid":"retired-long-ago","typ":"JWT"}`)) + "." +
		enc([]byte(`{"sub":"`+user+`"}`)) + "." + enc(make([]byte, 64))
	s.do("429 page", stepTimeout, func(ctx context.Context) error {
		u, _ := url.Parse(p.agentURL(user, ""))
		if err := setCookie(ctx, u.Scheme+"://"+u.Host, name, forged); err != nil {
			return err
		}
		for {
			resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(p.agentURL(user, "")))
			if err != nil {
				return err
			}
			if resp.Status == 429 {
				return until(ctx, "the 429 page", `document.querySelector('h1') && document.querySelector('meta[http-equiv="refresh"]')`)
			}
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("waiting for 429: %w (last %d at %s)", err, resp.Status, resp.URL)
			}
			// A refusal sends a subdomain browser on to the main origin,
			// which drops nothing: the forged cookie stays on the user origin.
		}
	})
	s.checkPage("429 page")
}

// cookieHeaders returns the browser's cookies for user's agent as
// name=value pairs.
func cookieHeaders(ctx context.Context, p *platform, user string) ([]string, error) {
	jar, err := cookiesOf(ctx, p.agentURL(user, ""))
	if err != nil {
		return nil, err
	}
	var out []string
	for name, c := range jar {
		out = append(out, name+"="+c.Value)
	}
	return out, nil
}

// everyNode sends GET u with hdr to each node proxy directly (as an API
// client) until each answers code, or ctx ends: the claim informers of the
// nodes see a change at their own pace.
func (p *platform) everyNode(ctx context.Context, u string, hdr map[string]string, code int) error {
	target, err := url.Parse(u)
	if err != nil {
		return err
	}
	client := &http.Client{
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	for _, n := range p.nodes {
		last := 0
		for last != code {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.addr+target.RequestURI(), nil)
			if err != nil {
				return err
			}
			req.Host = target.Host
			req.Header.Set("Accept", "application/json")
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			resp, err := client.Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				last = resp.StatusCode
			}
			if last == code {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("%s on %s answered %d, want %d: %w (%v)", u, n.name, last, code, ctx.Err(), err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}
