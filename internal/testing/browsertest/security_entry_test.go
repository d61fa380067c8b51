package browsertest

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/sandgate/sandgate/internal/requestpath/nodeproxy"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// entryStateCookie is the node proxy's entry state cookie on a user origin
// when cookies are not secure, as on this platform.
const entryStateCookie = "sandgate_state"

// TestSecurityEntryCodeBoundToBrowser replays the login CSRF of issue 20,
// item 1, in Chromium on the platform in subdomain routing. Mallory follows
// the entry flow to her own origin in her browser up to the redirect to
// /_sandgate/enter and keeps the entry code without redeeming it. Alice,
// signed in in her own browser context, is lured by a link on another site
// to mallory's entry URL, once holding no entry state for mallory's origin
// and once after a first lure there gave her one of her own: both times
// the entry is refused (401), alice holds no origin session for mallory's
// origin, and opening that origin again ends at the main origin's refusal
// (403) of alice as mallory. Mallory's own browser then redeems the same
// code and opens her agent.
func TestSecurityEntryCodeBoundToBrowser(t *testing.T) {
	p, browser, dir := browserTest(t, userorigin.Subdomain)
	mallory := newSession(t, browser, p, dir, "mallory")
	alice := newSession(t, browser, p, dir, "alice")
	malloryOrigin := p.agentURL("mallory", "")

	entrySignUp(alice, "alice")
	entrySignUp(mallory, "mallory")
	var enterURL string
	mallory.do("entry code kept, not redeemed", stepTimeout, func(ctx context.Context) error {
		var err error
		if enterURL, err = entryCodeUnredeemed(ctx, mallory); err != nil {
			return err
		}
		jar, err := cookiesOf(ctx, malloryOrigin)
		if err != nil {
			return err
		}
		if jar[entryStateCookie] == nil || jar[nodeproxy.DefaultOriginCookieName] != nil {
			return fmt.Errorf("%w: before redeeming, mallory's origin holds state %v and origin session %v, want a state and no session",
				errUnexpected, jar[entryStateCookie] != nil, jar[nodeproxy.DefaultOriginCookieName] != nil)
		}
		return nil
	})

	lure := entryLureSite(t)
	lured := func(withState bool) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			jar, err := cookiesOf(ctx, malloryOrigin)
			if err != nil {
				return err
			}
			if (jar[entryStateCookie] != nil) != withState {
				return fmt.Errorf("%w: alice holds an entry state for mallory's origin: %v, want %v", errUnexpected, !withState, withState)
			}
			return entryRefused(ctx, alice, lure, enterURL)
		}
	}
	alice.do("lured to mallory's entry code without a state", stepTimeout, lured(false))
	alice.do("lured to mallory's origin", stepTimeout, func(ctx context.Context) error {
		resp, err := followLure(ctx, lure, malloryOrigin)
		if err != nil {
			return err
		}
		if at := withoutEntryState(alice.location()); at != alice.url("/u/mallory/") || resp.Status != http.StatusForbidden {
			return fmt.Errorf("%w: mallory's origin led alice to %s (%d), want a 403 at /u/mallory/", errUnexpected, at, resp.Status)
		}
		return notLeaked(ctx, malloryOrigin)
	})
	alice.do("lured to mallory's entry code with her own state", stepTimeout, lured(true))
	alice.do("mallory's origin still closed to alice", stepTimeout, func(ctx context.Context) error {
		status, err := navigateURL(ctx, malloryOrigin)
		if err != nil {
			return err
		}
		if at := withoutEntryState(alice.location()); at != alice.url("/u/mallory/") || status != http.StatusForbidden {
			return fmt.Errorf("%w: mallory's origin led alice to %s (%d), want a 403 at /u/mallory/", errUnexpected, at, status)
		}
		if err := noOriginSession(ctx, malloryOrigin); err != nil {
			return err
		}
		return notLeaked(ctx, malloryOrigin)
	})

	mallory.do("mallory redeems her own code", agentTimeout, func(ctx context.Context) error {
		if _, err := navigateURL(ctx, enterURL); err != nil {
			return err
		}
		if err := until(ctx, "mallory's agent", mallory.agentReady("mallory")); err != nil {
			return err
		}
		return originCookies(ctx, mallory, "mallory")
	})
}

// entryRefused follows the lure site's link to enterURL, another user's
// entry code, in s's browser and checks that the node proxy refused it
// there (401) and left the browser without an origin session.
func entryRefused(ctx context.Context, s *session, lure, enterURL string) error {
	resp, err := followLure(ctx, lure, enterURL)
	if err != nil {
		return err
	}
	if at := s.location(); at != enterURL || resp.Status != http.StatusUnauthorized {
		return fmt.Errorf("%w: another user's entry code in %s's browser ended at %s with %d, want a 401 at %s",
			errUnexpected, s.name, at, resp.Status, enterURL)
	}
	u, err := url.Parse(enterURL)
	if err != nil {
		return err
	}
	if err := noOriginSession(ctx, u.Scheme+"://"+u.Host+"/"); err != nil {
		return err
	}
	return notLeaked(ctx, enterURL)
}

// entrySignUp signs user up through the landing page form, which leaves
// the browser signed in on the main origin at the token page.
func entrySignUp(s *session, user string) {
	s.t.Helper()
	s.do("signed up", agentTimeout, func(ctx context.Context) error {
		_, err := signUp(ctx, s, user)
		return err
	})
}

// entryCodeUnredeemed follows the token page's link to s's agent, which
// goes through s's origin (an entry state) and the main origin (an entry
// code bound to it), and stops the browser at the request that would
// redeem the code. It returns that request's URL.
func entryCodeUnredeemed(ctx context.Context, s *session) (string, error) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	paused := chromedp.Events(ctx, fetch.RequestPaused)
	pattern := []*fetch.RequestPattern{{URLPattern: "*" + userorigin.EnterPath + "*"}}
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{Patterns: pattern}); err != nil {
		return "", fmt.Errorf("intercept %s: %w", userorigin.EnterPath, err)
	}
	if err := click(ctx, fmt.Sprintf(`a.button[href="/u/%s/"]`, s.name)); err != nil {
		return "", err
	}
	for ev, err := range paused {
		if err != nil {
			return "", fmt.Errorf("wait for the entry request: %w", err)
		}
		if _, err := chromedp.Call(ctx, fetch.FailRequest, fetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: network.ErrorReasonAborted}); err != nil {
			return "", fmt.Errorf("stop the entry request: %w", err)
		}
		if _, err := chromedp.Call(ctx, fetch.Disable, cdp.Empty{}); err != nil {
			return "", fmt.Errorf("stop intercepting: %w", err)
		}
		enter := ev.Request.URL
		if !strings.HasPrefix(enter, s.p.agentURL(s.name, strings.TrimPrefix(userorigin.EnterPath, "/")+"?code=")) {
			return "", fmt.Errorf("%w: the entry request %s carries no code for %s's origin", errUnexpected, enter, s.name)
		}
		return enter, nil
	}
	return "", fmt.Errorf("wait for the entry request: %w", ctx.Err())
}

// entryLureSite is another site whose page links to the URL in its to
// parameter, as an attacker's page would.
func entryLureSite(t *testing.T) string {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>free prizes</title><p><a id="lure" href="%s">claim your prize</a></p>`,
			html.EscapeString(r.URL.Query().Get("to")))
	}))
	t.Cleanup(site.Close)
	return site.URL
}

// followLure opens the lure site's page linking to target and follows the
// link, returning the response the navigation ended with.
func followLure(ctx context.Context, site, target string) (*network.Response, error) {
	if _, err := navigateURL(ctx, site+"/?to="+url.QueryEscape(target)); err != nil {
		return nil, err
	}
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS("#lure"), chromedp.NodeVisible))
	if err != nil {
		return nil, fmt.Errorf("follow the link to %s: %w", target, err)
	}
	return resp, nil
}

// cookiesOf returns the browser's cookies for u by name.
func cookiesOf(ctx context.Context, u string) (map[string]*network.Cookie, error) {
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{u}})
	if err != nil {
		return nil, fmt.Errorf("cookies of %s: %w", u, err)
	}
	m := make(map[string]*network.Cookie)
	for _, c := range res.Cookies {
		m[c.Name] = c
	}
	return m, nil
}

// noOriginSession checks that the browser holds no origin session for
// origin.
func noOriginSession(ctx context.Context, origin string) error {
	jar, err := cookiesOf(ctx, origin)
	if err != nil {
		return err
	}
	if jar[nodeproxy.DefaultOriginCookieName] != nil {
		return fmt.Errorf("%w: the browser holds an origin session for %s", errUnexpected, origin)
	}
	return nil
}
