package browsertest

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sandgate/sandgate/internal/account"
)

// isolationFlow checks that s's user cannot open other's agent by typed
// URL: under /u/<other>/ on the main origin and, in subdomain routing, on
// other's origin, where the browser has no origin session and is sent to
// /u/<other>/ on the main origin, which refuses s's session.
func isolationFlow(s *session, other string) {
	s.t.Helper()
	urls := []string{s.url("/u/" + other + "/"), s.url("/u/" + other + "/api/events"), s.url("/u/" + other + "/assets/app.js")}
	if s.p.subdomain() {
		urls = append(urls, s.p.agentURL(other, ""), s.p.agentURL(other, "api/events"), s.p.agentURL(other, "assets/app.js"))
	}
	for _, url := range urls {
		s.do("typed URL "+url, stepTimeout, func(ctx context.Context) error {
			code, err := navigateURL(ctx, url)
			if err != nil {
				return err
			}
			if code < 400 {
				return fmt.Errorf("%w: %s answered %d to another user, want an error", errUnexpected, url, code)
			}
			s.t.Logf("%s's typed URL %s: %d", s.name, url, code)
			return notLeaked(ctx, url)
		})
	}
}

// linkIsolationFlow checks that s's user cannot open other's agent by
// following a link to it: one on a page of another site and one on the
// gateway's own landing page. Either ends refused at /u/<other>/ on the
// main origin (in subdomain routing via other's origin, which has no
// session for s). The other site's link to the user's own agent opens it,
// so the session cookie does go along on such a navigation.
func linkIsolationFlow(s *session, other string) {
	s.t.Helper()
	link, refusedAt := s.p.agentURL(other, ""), s.url("/u/"+other+"/")
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>elsewhere</title>
<p><a id="other-agent" href="%s">%s's agent</a></p>
<p><a id="own-agent" href="%s">%s's agent</a></p>`,
			html.EscapeString(link), html.EscapeString(other),
			html.EscapeString(s.p.agentURL(s.name, "")), html.EscapeString(s.name))
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
		return followDenied(ctx, s, "#other-agent", refusedAt)
	})
	s.do("own agent by the other site's link", agentTimeout, func(ctx context.Context) error {
		if err := openSite(ctx); err != nil {
			return err
		}
		if err := click(ctx, "#own-agent"); err != nil {
			return err
		}
		return until(ctx, s.name+"'s own agent", s.agentReady(s.name))
	})
	s.do("link on the landing page", stepTimeout, func(ctx context.Context) error {
		if err := openLanding(ctx, s, "the signed-in landing page", s.landingSignedIn(s.name)); err != nil {
			return err
		}
		a := fmt.Sprintf(`<p><a id="other-agent" href="%s">%s's agent</a></p>`, html.EscapeString(link), html.EscapeString(other))
		_, err := eval[bool](ctx, fmt.Sprintf(`document.querySelector('main').insertAdjacentHTML('beforeend', %q), true`, a))
		return err
	})
	s.do("followed the landing page's link", stepTimeout, func(ctx context.Context) error {
		return followDenied(ctx, s, "#other-agent", refusedAt)
	})
}

// followDenied clicks the link sel and checks that the gateway refused it
// at the URL refusedAt, without showing another user's agent.
func followDenied(ctx context.Context, s *session, sel, refusedAt string) error {
	resp, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
	if err != nil {
		return fmt.Errorf("follow %s: %w", sel, err)
	}
	at, err := eval[string](ctx, `location.href`)
	if err != nil {
		return err
	}
	// In subdomain routing the user origin sends the browser back with its
	// entry state's binding; that parameter is not part of where it ends.
	if at != refusedAt && withoutEntryState(at) != refusedAt {
		return fmt.Errorf("%w: the link led to %s, not to %s", errUnexpected, at, refusedAt)
	}
	if resp.Status < 400 {
		return fmt.Errorf("%w: %s answered %d to another user's link, want an error", errUnexpected, at, resp.Status)
	}
	s.t.Logf("%s followed a link to %s: %d", s.name, at, resp.Status)
	return notLeaked(ctx, at)
}

// withoutEntryState is u without the entry state binding parameter.
func withoutEntryState(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := p.Query()
	q.Del(account.EntryStateParam)
	p.RawQuery = q.Encode()
	return p.String()
}

// notLeaked checks that the page shows nothing of another user's agent.
func notLeaked(ctx context.Context, url string) error {
	leaked, err := eval[bool](ctx, `!!document.querySelector('#status') || document.body.innerText.includes('remember this')`)
	if err != nil {
		return err
	}
	if leaked {
		return fmt.Errorf("%w: %s showed the other user's agent", errUnexpected, url)
	}
	return nil
}

// originClosed checks, in subdomain routing, that user's origin no longer
// opens the agent (after a logout or a delete): the browser still holds
// the origin session cookie, but the node proxy refuses it and sends the
// navigation to the main origin, which shows the anonymous landing page.
// The refusal follows the claim, which the node proxies see through their
// informers shortly after the auth API answered, so the navigation is
// repeated until it ends there or ctx ends.
func originClosed(ctx context.Context, s *session, user string) error {
	url := s.p.agentURL(user, "")
	for {
		_, err := navigateURL(ctx, url)
		if err == nil {
			var closed bool
			closed, err = eval[bool](ctx, "!!("+s.landingAnonymous()+") && !document.querySelector('#status')")
			if err == nil && closed {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to send the browser to the anonymous landing page: %w (at %s, last error: %v)", url, ctx.Err(), s.location(), err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
