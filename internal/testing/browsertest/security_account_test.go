package browsertest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sandgate/sandgate/internal/userorigin"
)

// TestAgentScriptNeverSeesTheToken signs up in Chromium in path routing,
// where the agent's pages share the landing page's origin: the bearer token
// appears once, on the signup response's own page (no script, no-store),
// and a script on the agent page that fetches the landing page right after
// signup never sees it.
func TestAgentScriptNeverSeesTheToken(t *testing.T) {
	chromiumPath(t)
	dir := artifactsDir(t)
	p := startPlatform(t, userorigin.Path)
	s := newSession(t, startBrowser(t, p), p, dir, "carol")
	var token string
	s.do("signup form", stepTimeout, func(ctx context.Context) error {
		if _, err := navigate(ctx, s, "/"); err != nil {
			return err
		}
		if err := until(ctx, "the signup form", s.landingAnonymous()); err != nil {
			return err
		}
		return typeInto(ctx, `form[action="/users"] input[name="user"]`, "carol")
	})
	s.do("token shown on the signup response", agentTimeout, func(ctx context.Context) error {
		if err := click(ctx, `form[action="/users"] button`); err != nil {
			return err
		}
		if err := until(ctx, "the token page", `document.querySelector('.token pre')`); err != nil {
			return err
		}
		var err error
		if token, err = eval[string](ctx, `document.querySelector('.token pre').textContent.trim()`); err != nil {
			return err
		}
		if len(token) < 40 {
			return fmt.Errorf("%w: token %q", errUnexpected, token)
		}
		return nil
	})
	s.do("agent page's fetch of / holds no token", agentTimeout, func(ctx context.Context) error {
		if err := click(ctx, `a[href="/u/carol/"]`); err != nil {
			return err
		}
		if err := until(ctx, "carol's agent", s.agentReady("carol")); err != nil {
			return err
		}
		page, err := evalAsync(ctx, `fetch('/', {credentials: 'include'}).then(r => r.text())`)
		if err != nil {
			return err
		}
		if !strings.Contains(page, "carol") || strings.Contains(page, token) {
			return fmt.Errorf("%w: the landing page an agent script fetched (signed in: %v) holds the token: %v",
				errUnexpected, strings.Contains(page, "carol"), strings.Contains(page, token))
		}
		cookies, err := eval[string](ctx, `document.cookie`)
		if err != nil {
			return err
		}
		if strings.Contains(cookies, token) {
			return fmt.Errorf("%w: a script-readable cookie holds the token", errUnexpected)
		}
		return nil
	})
}

// evalAsync evaluates a promise-valued expression and returns its string.
func evalAsync(ctx context.Context, expression string) (string, error) {
	return chromedp.Run(ctx, chromedp.Evaluate[string](expression, chromedp.EvalAwaitPromise))
}
