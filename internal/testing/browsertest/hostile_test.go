package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/accountpath/authapi"
	"github.com/sandgate/sandgate/internal/requestpath/nodeproxy"
)

// hostileName is the workspace file the hostile page is stored as.
const hostileName = "hostile.html"

// hostilePage is an agent page gone bad (issue 11): served by the app from
// user's workspace on user's origin, its inline script tries, with the
// browser's credentials, to log user out, recreate and delete the account
// on the main origin (by fetch, and logout also by a form posted into a
// hidden frame), to read other's conversation from other's origin, and to
// read the session cookies. It writes each outcome into the page and into
// window.outcomes, and sets data-done on the body when all have settled.
func hostilePage(p *platform, user, other string) string {
	js := func(v string) string {
		b, _ := json.Marshal(v) // a string always marshals
		return string(b)
	}
	return fmt.Sprintf(`<!doctype html>
<html><head><meta charset="utf-8"><title>hostile agent page</title></head>
<body>
<h1>An agent page's script attacks</h1>
<ul id="outcomes"></ul>
<form id="logout-form" method="post" action=%[1]s target="sink"></form>
<iframe name="sink" title="form target" width="600" height="120"></iframe>
<script>
const main = %[2]s, otherOrigin = %[3]s, user = %[4]s;
window.outcomes = {};
function record(what, outcome) {
  window.outcomes[what] = outcome;
  const li = document.createElement('li');
  li.id = 'outcome-' + what;
  li.textContent = what + ': ' + outcome;
  document.getElementById('outcomes').append(li);
}
async function attempt(what, url, init) {
  try {
    const r = await fetch(url, Object.assign({credentials: 'include'}, init));
    let body = '';
    try { body = await r.text(); } catch (e) { body = '(unreadable: ' + e.name + ')'; }
    record(what, 'status ' + r.status + ' ' + body.slice(0, 300));
  } catch (e) {
    record(what, 'blocked: ' + e.name + ': ' + e.message);
  }
}
const form = {'Content-Type': 'application/x-www-form-urlencoded'};
(async () => {
  record('cookie', JSON.stringify(document.cookie));
  await attempt('recreate', main + '/recreate', {method: 'POST', headers: form, body: 'confirm=' + user});
  await attempt('delete', main + '/users/' + user, {method: 'DELETE'});
  await attempt('logout', main + '/logout', {method: 'POST', headers: form, body: ''});
  await attempt('other-messages', otherOrigin + '/api/messages', {});
  const sink = document.querySelector('iframe[name="sink"]');
  await new Promise(done => {
    sink.addEventListener('load', done, {once: true});
    document.getElementById('logout-form').submit();
  });
  record('logout-form', 'posted');
  document.body.dataset.done = 'yes';
})();
</script>
</body></html>
`, js(p.mainOrigin()+"/logout"), js(p.mainOrigin()), js(strings.TrimSuffix(p.agentURL(other, ""), "/")), js(user))
}

// hostileFlow stores hostilePage in user's workspace (from the agent UI,
// as the agent would write a file), opens it at /view/ on user's origin,
// lets its script run, and checks that it achieved nothing: no session
// cookie was readable, other's conversation was not, and user is still
// signed in on the main origin with the same account and workspace (a
// recreate would have emptied the conversation) and still opens the agent.
func hostileFlow(s *session, p *platform, user, other string) {
	s.t.Helper()
	s.do("hostile page stored in the workspace", agentTimeout, func(ctx context.Context) error {
		if err := openAgent(ctx, s, user, "the agent", s.agentReady(user)); err != nil {
			return err
		}
		body, _ := json.Marshal(hostilePage(p, user, other)) // a string always marshals
		status, err := chromedp.Run(ctx, chromedp.Evaluate[int](
			fmt.Sprintf(`fetch('/api/files/%s', {method: 'PUT', body: %s}).then(r => r.status)`, hostileName, body),
			chromedp.EvalAwaitPromise))
		if err != nil {
			return fmt.Errorf("upload %s: %w", hostileName, err)
		}
		if status != 201 {
			return fmt.Errorf("%w: upload of %s answered %d, want 201", errUnexpected, hostileName, status)
		}
		return nil
	})
	// The page's mutations must reach the auth API, with the main session
	// cookie (same site), and be refused there; DELETE is stopped earlier,
	// by the browser's CORS preflight.
	refusals := func() map[string]int {
		return map[string]int{"logout": p.authRequests("logout", 403), "recreate": p.authRequests("recreate", 403)}
	}
	before := refusals()
	s.do("hostile page ran", stepTimeout, func(ctx context.Context) error {
		url := p.agentURL(user, "view/"+hostileName)
		if err := navigateWant(ctx, url, 200, url); err != nil {
			return err
		}
		if err := until(ctx, "the page's attempts to settle", `document.body?.dataset.done === 'yes'`); err != nil {
			return err
		}
		outcomes, err := eval[map[string]string](ctx, `window.outcomes`)
		if err != nil {
			return err
		}
		for _, what := range []string{"cookie", "recreate", "delete", "logout", "other-messages", "logout-form"} {
			s.t.Logf("hostile page, %s: %s", what, outcomes[what])
		}
		if err := hostileOutcomes(outcomes, other); err != nil {
			return err
		}
		// fetch and form for logout, fetch for recreate.
		after := refusals()
		if after["logout"]-before["logout"] != 2 || after["recreate"]-before["recreate"] != 1 {
			return fmt.Errorf("%w: the auth API refused %d logouts and %d recreates from the page, want 2 and 1", errUnexpected,
				after["logout"]-before["logout"], after["recreate"]-before["recreate"])
		}
		return nil
	})
	s.do("still signed in on the main origin", stepTimeout, func(ctx context.Context) error {
		return openLanding(ctx, s, "the signed-in landing page", s.landingSignedIn(user))
	})
	s.do("account and claim intact", stepTimeout, func(ctx context.Context) error {
		name := account.ClaimName(authapi.DefaultClaimPrefix, user)
		claim, err := p.sb.SandboxClaims(p.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("claim of %s: %w", user, err)
		}
		if claim.DeletionTimestamp != nil {
			return fmt.Errorf("%w: claim %s is being deleted", errUnexpected, name)
		}
		return nil
	})
	s.do("agent still opens with its conversation", agentTimeout, func(ctx context.Context) error {
		return openAgent(ctx, s, user, "the agent with the conversation from before", s.agentReady(user)+fmt.Sprintf(
			` && document.querySelector('#conversation').textContent.includes(%q)`, "remember this, "+user))
	})
}

// hostileOutcomes checks what the hostile page's script saw: neither
// session cookie in document.cookie, nothing of other's conversation, and
// no readable success from the auth API's mutations.
func hostileOutcomes(outcomes map[string]string, other string) error {
	cookie, ok := outcomes["cookie"]
	if !ok {
		return fmt.Errorf("%w: the page recorded no document.cookie", errUnexpected)
	}
	for _, name := range []string{nodeproxy.DefaultCookieName, nodeproxy.DefaultOriginCookieName} {
		if strings.Contains(cookie, name+"=") {
			return fmt.Errorf("%w: the page's script read the %s cookie", errUnexpected, name)
		}
	}
	msgs, ok := outcomes["other-messages"]
	if !ok {
		return fmt.Errorf("%w: the page recorded no attempt on %s's messages", errUnexpected, other)
	}
	if strings.Contains(msgs, "remember this") || !refused(msgs) {
		return fmt.Errorf("%w: the page read %s's messages: %s", errUnexpected, other, msgs)
	}
	for _, what := range []string{"recreate", "delete", "logout"} {
		if o, ok := outcomes[what]; !ok || !refused(o) {
			return fmt.Errorf("%w: %s from the agent page: %q, want blocked or an error status", errUnexpected, what, o)
		}
	}
	return nil
}

// refused reports whether a fetch outcome the hostile page recorded is a
// failure: blocked by the browser, or an error status the script could read.
func refused(outcome string) bool {
	if strings.HasPrefix(outcome, "blocked: ") {
		return true
	}
	var status int
	_, err := fmt.Sscanf(outcome, "status %d", &status)
	return err == nil && status >= 400
}
