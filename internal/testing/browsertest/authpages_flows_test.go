package browsertest

import (
	"context"
	"fmt"
	"net/url"
	"testing"

	"github.com/sandgate/sandgate/internal/userorigin"
)

// TestAuthPages shows, in Chromium against the full local platform (path
// routing), every page of the auth API that says what went wrong and what
// to do next, each with a screenshot at full width and at 360 px and an
// axe-core check: a signup refused for its name (the rule in words beside
// the kept name, also in the pattern's title), a taken name (and the
// sign-in form it fills), a wrong token (name and deep link kept, never
// "Sign in required"), the token view and its reload ("shown once", not
// a second signup), the 401, 403 and 404 pages in the layout the node
// proxy's pages share; then a sign-in from a deep link (the landing page
// at /?next=, where a node proxy sends a signed-out browser) that lands
// on that link.
func TestAuthPages(t *testing.T) {
	axeAvailable(t)
	p, browser, dir := browserTest(t, userorigin.Path)
	const user = "erin"
	s := newSession(t, browser, p, dir, user)

	s.do("browser explains the name rule", stepTimeout, func(ctx context.Context) error {
		if err := openLanding(ctx, s, "the signup form", s.landingAnonymous()); err != nil {
			return err
		}
		if err := typeInto(ctx, `form[action="/users"] input[name="user"]`, "Erin Smith"); err != nil {
			return err
		}
		msg, err := eval[string](ctx, `(() => { const i = document.querySelector('form[action="/users"] input[name="user"]');
  return i.validity.patternMismatch && i.title.includes('lowercase letters') ? i.validationMessage : ''; })()`)
		if err != nil {
			return err
		}
		if msg == "" {
			return fmt.Errorf("%w: the name field does not refuse %q with the rule in its title", errUnexpected, "Erin Smith")
		}
		t.Logf("the browser's own message for the name field: %q", msg)
		return nil
	})
	s.do("signup refused for its name", stepTimeout, func(ctx context.Context) error {
		// Past the browser's own check, as a browser without it would send.
		if _, err := eval[bool](ctx, `document.querySelector('form[action="/users"]').noValidate = true`); err != nil {
			return err
		}
		if err := click(ctx, `form[action="/users"] button`); err != nil {
			return err
		}
		return until(ctx, "the signup form again with the kept name and the rule", `location.pathname === '/users'
  && document.querySelector('form[action="/users"] input[name="user"]').value === 'Erin Smith'
  && document.querySelector('form[action="/users"] input[name="user"]').getAttribute('aria-describedby').includes('signup-user-error')
  && document.querySelector('#signup-user-error[role="alert"]').textContent.includes('lowercase letters')`)
	})
	s.checkPage("refused signup")

	var token string
	s.do("token page after signup", agentTimeout, func(ctx context.Context) error {
		var err error
		token, err = signUp(ctx, s, user)
		return err
	})
	s.checkPage("token page")
	s.do("token page after a reload", stepTimeout, func(ctx context.Context) error {
		code, err := reload(ctx)
		if err != nil {
			return err
		}
		if code != 410 {
			return fmt.Errorf("%w: the reloaded token page answered %d, want 410", errUnexpected, code)
		}
		return until(ctx, "the token was shown once", fmt.Sprintf(`location.pathname === '/users/%s/token' && document.querySelector('h1').textContent === 'This token was shown once'
  && !document.body.textContent.includes(%q) && document.querySelector('main nav a[href="/"]')`, user, token))
	})
	s.checkPage("token page after a reload")
	s.do("403 page", stepTimeout, func(ctx context.Context) error {
		return errorPage(ctx, s.url("/users/somebody/delete"), 403, fmt.Sprintf(`a[href="/u/%s/"]`, user))
	})
	s.checkPage("403 page")
	s.do("404 page", stepTimeout, func(ctx context.Context) error {
		if err := errorPage(ctx, s.url("/no-such-page"), 404, `a[href="/"]`); err != nil {
			return err
		}
		return until(ctx, "the 404 page's words", `document.title === 'Page not found' && document.querySelector('main p.muted').textContent === 'sandgate'`)
	})
	s.checkPage("404 page")
	s.do("account page: awake, with its controls", agentTimeout, func(ctx context.Context) error {
		return openLanding(ctx, s, "the account page of a Ready agent with keep-awake and suspend-now", s.landingSignedIn(user)+`
  && document.querySelector('.state-Ready')
  && document.querySelector('form[action="/users/erin/keep-awake"] button').textContent === 'Keep awake for 1 h'
  && document.querySelector('form[action="/users/erin/suspend"] button')`)
	})
	s.checkPage("account page")
	s.do("keep awake", stepTimeout, func(ctx context.Context) error {
		if err := click(ctx, `form[action="/users/erin/keep-awake"] button`); err != nil {
			return err
		}
		return until(ctx, "the account page again, the suspension no earlier than an hour from now", s.landingSignedIn(user)+`
  && [...document.querySelectorAll('dt')].some(dt => dt.textContent === 'Suspends' && /not before .*\(1 h from now\)|\(59 min from now\)/.test(dt.nextElementSibling.textContent))`)
	})
	s.do("suspend now", agentTimeout, func(ctx context.Context) error {
		if err := click(ctx, `form[action="/users/erin/suspend"] button`); err != nil {
			return err
		}
		return until(ctx, "the account page again, the agent suspended, its controls gone", s.landingSignedIn(user)+`
  && document.querySelector('.state-Suspended') && !document.querySelector('form[action="/users/erin/suspend"]')`)
	})
	s.checkPage("account page, suspended")
	s.do("wake schedule", stepTimeout, func(ctx context.Context) error {
		if _, err := eval[bool](ctx, `(() => { document.querySelector('#wake-at').value = '07:45';
  document.querySelector('#wake-repeat').value = 'daily'; return true; })()`); err != nil {
			return err
		}
		if err := click(ctx, `form[action="/users/erin/wake-schedule"] button`); err != nil {
			return err
		}
		return until(ctx, "the account page again with the schedule shown and kept in the form", s.landingSignedIn(user)+`
  && [...document.querySelectorAll('dt')].some(dt => dt.textContent === 'Wakes' && dt.nextElementSibling.textContent.startsWith('every day at 07:45 UTC; next '))
  && document.querySelector('#wake-at').value === '07:45' && document.querySelector('#wake-repeat').value === 'daily'`)
	})
	s.checkPage("account page with a wake schedule")

	other := newSession(t, browser, p, dir, "anonymous")
	other.do("signup of a taken name", stepTimeout, func(ctx context.Context) error {
		if err := openLanding(ctx, other, "the signup form", other.landingAnonymous()); err != nil {
			return err
		}
		if err := typeInto(ctx, `form[action="/users"] input[name="user"]`, user); err != nil {
			return err
		}
		if err := click(ctx, `form[action="/users"] button`); err != nil {
			return err
		}
		return until(ctx, "the taken name, filled into the sign-in form", fmt.Sprintf(`location.pathname === '/users'
  && document.querySelector('#signup-user-error').textContent.includes('is taken')
  && document.querySelector('form[action="/login"] input[name="user"]').value === %q`, user))
	})
	other.checkPage("taken name")
	other.do("sign-in with a wrong token", stepTimeout, func(ctx context.Context) error {
		landing := other.url("/?next=" + url.QueryEscape("/u/"+user+"/some/page?x=1"))
		if err := navigateWant(ctx, landing, 200, landing); err != nil {
			return err
		}
		if err := typeInto(ctx, `form[action="/login"] input[name="user"]`, user); err != nil {
			return err
		}
		if err := typeInto(ctx, `form[action="/login"] input[name="token"]`, "not-the-token"); err != nil {
			return err
		}
		if err := click(ctx, `form[action="/login"] button`); err != nil {
			return err
		}
		return until(ctx, "the sign-in form again, name and deep link kept", fmt.Sprintf(`location.pathname === '/login'
  && document.title === 'Sign up or sign in'
  && document.querySelector('form[action="/login"] input[name="user"]').value === %q
  && document.querySelector('form[action="/login"] input[name="token"]').value === ''
  && document.querySelector('form[action="/login"] input[name="next"]').value === %q
  && document.querySelector('#signin-token-error[role="alert"]').textContent.includes('do not open an account')`, user, "/u/"+user+"/some/page?x=1"))
	})
	other.checkPage("refused sign-in")
	other.do("401 page", stepTimeout, func(ctx context.Context) error {
		// A form an old tab still shows, sent after the session ended.
		if _, err := eval[bool](ctx, fmt.Sprintf(`(() => { const f = document.createElement('form'); f.method = 'post'; f.action = '/users/%s/logout';
  document.body.append(f); f.submit(); return true; })()`, user)); err != nil {
			return err
		}
		return until(ctx, "the 401 page", `document.title === 'Sign in required' && document.querySelector('main nav a[href="/"]')`)
	})
	other.checkPage("401 page")

	deep := newSession(t, browser, p, dir, "deep-link")
	deep.do("deep link signed in", agentTimeout, func(ctx context.Context) error {
		return signInFromDeepLink(ctx, deep, deep.url("/?next="+url.QueryEscape("/u/"+user+"/some/page?x=1")), user, token)
	})
}

// TestAuthDeepLinkThroughNodeProxy: a signed-out browser that opens a deep
// link into an agent is sent by the node proxy to the landing page with
// that link in ?next=, and signing in there lands on it.
func TestAuthDeepLinkThroughNodeProxy(t *testing.T) {
	p, browser, dir := browserTest(t, userorigin.Path)
	const user = "fern"
	s := newSession(t, browser, p, dir, user)
	var token string
	s.do("signed up", agentTimeout, func(ctx context.Context) error {
		var err error
		token, err = signUp(ctx, s, user)
		return err
	})
	deep := newSession(t, browser, p, dir, "deep-link")
	deep.do("deep link signed in", agentTimeout, func(ctx context.Context) error {
		return signInFromDeepLink(ctx, deep, p.agentURL(user, "some/page?x=1"), user, token)
	})
}

// signInFromDeepLink opens start signed out, which must offer the sign-in
// form carrying the deep link /u/<user>/some/page?x=1 (the landing page
// at once, or a page whose sign-in link leads there), signs in as user
// with token, and waits to land on the deep link.
func signInFromDeepLink(ctx context.Context, s *session, start, user, token string) error {
	next := "/u/" + user + "/some/page?x=1"
	if _, err := navigateURL(ctx, start); err != nil {
		return err
	}
	link := fmt.Sprintf(`main a[href="/?next=%s"]`, url.QueryEscape(next))
	if err := until(ctx, "a sign-in form or link carrying "+next, fmt.Sprintf(`document.querySelector('form[action="/login"] input[name="next"]')?.value === %q || document.querySelector(%q)`, next, link)); err != nil {
		return err
	}
	if onPage, err := eval[bool](ctx, `!!document.querySelector('form[action="/login"] input[name="next"]')`); err != nil {
		return err
	} else if !onPage {
		if err := click(ctx, link); err != nil {
			return err
		}
	}
	if err := until(ctx, "the sign-in form saying where it goes on to", fmt.Sprintf(`location.pathname === '/' && document.querySelector('form[action="/login"] input[name="next"]')?.value === %q
  && document.querySelector('main').textContent.includes(%q)`, next, next)); err != nil {
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
	return until(ctx, "the deep link after sign-in", fmt.Sprintf(`location.href === %q`, s.url(next)))
}
