package browsertest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/accountpath/authapi"
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
		if err := openLanding(ctx, s, "the signup form", s.landingAnonymous()); err != nil {
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
		if err := openAgentFromTokenPage(ctx, s, "carol"); err != nil {
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

// TestAgentScriptCannotTakeANewToken: in path routing an agent page's
// script shares the account pages' origin and the browser sends it the
// session cookie. It asks for a new token the two ways it can: by fetch,
// which the auth API refuses (403, no token, the old token still valid)
// as it is no navigation; and by a form posted into a window it opened,
// a navigation the auth API answers with the token page, whose
// Cross-Origin-Opener-Policy leaves the script without a handle on it.
func TestAgentScriptCannotTakeANewToken(t *testing.T) {
	p, browser, dir := browserTest(t, userorigin.Path)
	s := newSession(t, browser, p, dir, "dora")
	var token string
	s.do("signup", agentTimeout, func(ctx context.Context) error {
		var err error
		token, err = signUp(ctx, s, "dora")
		return err
	})
	tokenHolds := func(ctx context.Context, tok string) error {
		claim, err := p.sb.SandboxClaims(p.ns).Get(ctx, account.ClaimName(authapi.DefaultClaimPrefix, "dora"), metav1.GetOptions{})
		if err != nil {
			return err
		}
		a, err := account.FromClaim(claim)
		if err != nil {
			return err
		}
		if !a.TokenMatches(tok) {
			return fmt.Errorf("%w: the account's token changed", errUnexpected)
		}
		return nil
	}
	s.do("agent page's fetch for a new token refused", agentTimeout, func(ctx context.Context) error {
		if err := openAgentFromTokenPage(ctx, s, "dora"); err != nil {
			return err
		}
		for _, path := range []string{"/users/dora/token", "/recreate"} {
			out, err := evalAsync(ctx, fmt.Sprintf(`fetch(%q, {method: 'POST', credentials: 'include', headers: {Accept: 'application/json'}})
  .then(async r => r.status + ' ' + await r.text())`, path))
			if err != nil {
				return err
			}
			t.Logf("agent script's fetch POST %s: %s", path, out)
			if !strings.HasPrefix(out, "403 ") || strings.Contains(out, `"token"`) || !strings.Contains(out, "bearer token") {
				return fmt.Errorf("%w: fetch POST %s from the agent page answered %q, want 403 without a token", errUnexpected, path, out)
			}
		}
		return tokenHolds(ctx, token)
	})
	var popup target.ID
	s.do("agent page's window on the token page is cut off", agentTimeout, func(ctx context.Context) error {
		before, err := chromedp.Targets(ctx)
		if err != nil {
			return err
		}
		// The form goes into a window the script opened (with a user
		// gesture, as a click would give it, so no popup blocker stops it).
		// The script then watches that window until it holds the token
		// page, closes, or stops answering.
		out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`new Promise(done => {
  const w = window.open('about:blank', 'tokenwin');
  if (!w) { done('no window'); return; }
  const f = document.createElement('form');
  f.method = 'post'; f.action = '/users/dora/token'; f.target = 'tokenwin';
  document.body.append(f);
  f.submit();
  const start = Date.now();
  const look = () => {
    try {
      if (w.closed) { done('closed'); return; }
      const d = w.document;
      if (d === null) { done('null document'); return; }
      const pre = d.querySelector('.token pre');
      if (pre) { done('read ' + pre.textContent.trim()); return; }
    } catch (e) { done('threw ' + e.name); return; }
    if (Date.now() - start > 20000) { done('timeout at ' + w.location.href); return; }
    setTimeout(look, 50);
  };
  look();
})`, chromedp.EvalAwaitPromise, func(p *runtime.EvaluateParams) { gesture := true; p.UserGesture = &gesture }))
		if err != nil {
			return err
		}
		t.Logf("agent script's handle on the window it posted the form into: %s", out)
		if out != "closed" && out != "null document" && !strings.HasPrefix(out, "threw ") {
			return fmt.Errorf("%w: the agent script's window on the rotation: %q, want closed, null or an exception", errUnexpected, out)
		}
		after, err := chromedp.Targets(ctx)
		if err != nil {
			return err
		}
		known := map[target.ID]bool{}
		for _, ti := range before {
			known[ti.TargetID] = true
		}
		for _, ti := range after {
			if ti.Type == "page" && !known[ti.TargetID] && strings.HasSuffix(ti.URL, "/users/dora/token") {
				popup = ti.TargetID
			}
		}
		if popup == "" {
			return fmt.Errorf("%w: no window shows the rotation's answer", errUnexpected)
		}
		return nil
	})
	s.do("the user sees the new token in that window", stepTimeout, func(ctx context.Context) error {
		// The first run attaches to the window, which lives as long as the
		// context of that run: use pctx itself.
		pctx, cancel := chromedp.NewContext(s.ctx, chromedp.WithTargetID(popup))
		defer cancel()
		if err := chromedp.Do(pctx); err != nil {
			return fmt.Errorf("attach to the token window: %w", err)
		}
		wctx, cancelWait := context.WithTimeout(pctx, stepTimeout)
		defer cancelWait()
		shown, err := readTokenPage(wctx, s, "dora")
		if err != nil {
			return err
		}
		if shown == token || len(shown) < 40 {
			return fmt.Errorf("%w: the token page shows %q", errUnexpected, shown)
		}
		return tokenHolds(ctx, shown)
	})
}
