package browsertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/testkit"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// TestAdminPage drives the admin page in Chromium on the full local
// platform in path routing, where every agent shares the admin's origin:
// a user is refused it; the admin lists and filters the accounts, opens
// one and suspends, wakes, signs out everywhere, replaces the token of
// (seeing the new token once), sets the egress budget of, recreates and
// deletes it after typing its name, each action an audit event naming the
// admin. The admin's own agent page's script can neither fetch the list
// nor post an action form, even into its own tab.
func TestAdminPage(t *testing.T) {
	axeAvailable(t)
	p, browser, dir := browserTest(t, userorigin.Path)

	carol := newSession(t, browser, p, dir, "carol")
	carol.do("carol signs up", agentTimeout, func(ctx context.Context) error {
		_, err := signUp(ctx, carol, "carol")
		return err
	})
	carol.do("carol is refused the admin page", stepTimeout, func(ctx context.Context) error {
		if err := errorPage(ctx, carol.url("/admin/accounts"), 403, `a[href="/"]`); err != nil {
			return err
		}
		return until(ctx, "the admins-only page", `document.querySelector('h1').textContent === 'Admins only'`)
	})

	s := newSession(t, browser, p, dir, adminUser)
	s.do("the admin signs up", agentTimeout, func(ctx context.Context) error {
		_, err := signUp(ctx, s, adminUser)
		return err
	})
	s.do("account list", stepTimeout, func(ctx context.Context) error {
		if err := navigateWant(ctx, s.url("/admin/accounts"), 200, "the account list"); err != nil {
			return err
		}
		return until(ctx, "both accounts listed", `document.querySelector('a[href="/admin/accounts/carol"]') && document.querySelector('a[href="/admin/accounts/opal"]')
  && document.querySelectorAll('tbody tr').length === 2`)
	})
	s.checkPage("admin account list")
	s.do("filter by name", stepTimeout, func(ctx context.Context) error {
		if err := typeInto(ctx, "#admin-q", "car"); err != nil {
			return err
		}
		if err := click(ctx, `form[role="search"] button`); err != nil {
			return err
		}
		return until(ctx, "carol alone", `location.search.includes('q=car') && document.querySelectorAll('tbody tr').length === 1
  && document.querySelector('a[href="/admin/accounts/carol"]')`)
	})
	s.do("open carol", stepTimeout, func(ctx context.Context) error {
		if err := click(ctx, `a[href="/admin/accounts/carol"]`); err != nil {
			return err
		}
		return until(ctx, "carol's page with its actions", `document.querySelector('h1').textContent === 'carol' && document.querySelector('form[action="/admin/accounts/carol/delete"]')`)
	})
	s.checkPage("admin account page")
	for _, step := range []struct{ action, state string }{{"suspend", "Suspended"}, {"wake", ""}, {"logout", ""}} {
		s.do(step.action+" carol", agentTimeout, func(ctx context.Context) error {
			if err := click(ctx, fmt.Sprintf(`form[action="/admin/accounts/carol/%s"] button`, step.action)); err != nil {
				return err
			}
			return until(ctx, step.action+" done", fmt.Sprintf(`location.pathname === '/admin/accounts/carol' && document.querySelector('[role="status"]').textContent === 'Done: %s.'
  && (%q === '' || document.querySelector('.state-%s'))`, step.action, step.state, step.state))
		})
	}
	carol.do("carol is signed out", stepTimeout, func(ctx context.Context) error {
		return openLanding(ctx, carol, "the signup form", carol.landingAnonymous())
	})
	s.do("replace carol's token", stepTimeout, func(ctx context.Context) error {
		if err := click(ctx, `form[action="/admin/accounts/carol/rotate"] button`); err != nil {
			return err
		}
		return until(ctx, "the new token, shown once", `document.querySelector('.token pre') && document.querySelector('.token pre').textContent.trim().length >= 40`)
	})

	s.do("set carol's egress budget", stepTimeout, func(ctx context.Context) error {
		if err := navigateWant(ctx, s.url("/admin/accounts/carol"), 200, "carol's page"); err != nil {
			return err
		}
		if _, err := eval[bool](ctx, `(() => { document.querySelector('form[action="/admin/accounts/carol/budget"] input[name="tokens_per_day"]').value = ''; return true; })()`); err != nil {
			return err
		}
		if err := typeInto(ctx, `form[action="/admin/accounts/carol/budget"] input[name="tokens_per_day"]`, "12345"); err != nil {
			return err
		}
		if err := click(ctx, `form[action="/admin/accounts/carol/budget"] button`); err != nil {
			return err
		}
		return until(ctx, "the budget shown", `document.querySelector('[role="status"]').textContent === 'Done: budget.'
  && [...document.querySelectorAll('dt')].some(dt => dt.textContent === 'Model tokens a day' && dt.nextElementSibling.textContent === '12345 (set by an admin)')`)
	})
	s.do("recreate carol after typing her name", agentTimeout, func(ctx context.Context) error {
		if err := typeInto(ctx, `form[action="/admin/accounts/carol/recreate"] input[name="confirm"]`, "carol"); err != nil {
			return err
		}
		if err := click(ctx, `form[action="/admin/accounts/carol/recreate"] button`); err != nil {
			return err
		}
		return until(ctx, "the new token of the recreated account", `document.querySelector('main').textContent.includes('was recreated')
  && document.querySelector('.token pre').textContent.trim().length >= 40`)
	})

	s.do("the admin's agent script cannot read the admin page", agentTimeout, func(ctx context.Context) error {
		if err := openAgent(ctx, s, adminUser, "the admin's own agent", s.agentReady(adminUser)); err != nil {
			return err
		}
		status, err := evalAsync(ctx, `fetch('/admin/accounts', {credentials: 'include'}).then(r => String(r.status))`)
		if err != nil {
			return err
		}
		if status != "403" {
			return fmt.Errorf("%w: an agent script's fetch of the admin list answered %s", errUnexpected, status)
		}
		return nil
	})
	s.do("the admin's agent script cannot post an admin form", stepTimeout, func(ctx context.Context) error {
		if _, err := eval[bool](ctx, `(() => { const f = document.createElement('form'); f.method = 'post'; f.action = '/admin/accounts/carol/delete';
  const c = document.createElement('input'); c.name = 'confirm'; c.value = 'carol'; f.appendChild(c); document.body.appendChild(f); f.submit(); return true; })()`); err != nil {
			return err
		}
		return until(ctx, "the expired-form page", `location.pathname === '/admin/accounts/carol/delete' && document.querySelector('h1').textContent === 'This form has expired'`)
	})

	s.do("delete carol after typing her name", agentTimeout, func(ctx context.Context) error {
		if err := navigateWant(ctx, s.url("/admin/accounts/carol"), 200, "carol's page"); err != nil {
			return err
		}
		if err := typeInto(ctx, `form[action="/admin/accounts/carol/delete"] input[name="confirm"]`, "carol"); err != nil {
			return err
		}
		if err := click(ctx, `form[action="/admin/accounts/carol/delete"] button`); err != nil {
			return err
		}
		return until(ctx, "the list without carol", `location.pathname === '/admin/accounts' && !document.querySelector('a[href="/admin/accounts/carol"]')`)
	})

	want := []string{"suspend_now:ok", "wake:ok", "logout_everywhere:ok", "token_rotate:ok", "egress_budget:ok", "recreate:ok", "delete:ok"}
	var got []string
	for _, line := range testkit.JSONLines(t, p.logs.String()) {
		if line["log"] == "audit" && line["admin"] == adminUser && line["user"] == "carol" {
			got = append(got, fmt.Sprint(line["action"], ":", line["outcome"]))
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("audit events naming the admin:\n got %v\nwant %v", got, want)
	}
}

// TestAdminPageAtScale measures, in Chromium, how long the admin page takes
// to load with adminScaleAccounts accounts (their claims name a warm pool
// that does not exist, so they stay Waking with the controller's reason):
// the navigation's duration as the browser reports it, median and spread
// of five loads, logged and not asserted.
func TestAdminPageAtScale(t *testing.T) {
	p, browser, dir := browserTest(t, userorigin.Path)
	s := newSession(t, browser, p, dir, adminUser)
	s.do("the admin signs up", agentTimeout, func(ctx context.Context) error {
		_, err := signUp(ctx, s, adminUser)
		return err
	})
	start := time.Now()
	createAccounts(t, p, adminScaleAccounts)
	t.Logf("created %d accounts in %v", adminScaleAccounts, time.Since(start).Round(time.Millisecond))
	var loads []float64
	s.do("the account list at scale", agentTimeout, func(ctx context.Context) error {
		want := fmt.Sprintf(`document.querySelector('main p:not(.muted)').textContent.startsWith('%d accounts match')`, adminScaleAccounts+1)
		// The replica lists what its informer has seen: load the page
		// until every account is on it (the first loads also warm the
		// templates and connections), then measure.
		for listed := false; !listed; {
			if err := navigateWant(ctx, s.url("/admin/accounts"), 200, "the account list"); err != nil {
				return err
			}
			var err error
			if listed, err = eval[bool](ctx, want); err != nil {
				return err
			}
		}
		for range 5 {
			if err := navigateWant(ctx, s.url("/admin/accounts"), 200, "the account list"); err != nil {
				return err
			}
			if err := until(ctx, "every account counted", want); err != nil {
				return err
			}
			ms, err := eval[float64](ctx, `performance.getEntriesByType('navigation')[0].duration`)
			if err != nil {
				return err
			}
			loads = append(loads, ms)
		}
		return nil
	})
	slices.Sort(loads)
	t.Logf("admin account list, %d accounts, 100 a page: load %.0f ms median (min %.0f, max %.0f, %d loads)",
		adminScaleAccounts+1, loads[len(loads)/2], loads[0], loads[len(loads)-1], len(loads))
}

// adminScaleAccounts is how many accounts TestAdminPageAtScale adds.
const adminScaleAccounts = 5000

// createAccounts creates n account claims named scale-<i> on a warm pool
// that does not exist, 16 at a time.
func createAccounts(t *testing.T, p *platform, n int) {
	t.Helper()
	claims := p.sb.SandboxClaims(p.ns)
	var g errgroup.Group
	g.SetLimit(16)
	for i := range n {
		g.Go(func() error {
			user := fmt.Sprintf("scale-%05d", i)
			_, err := claims.Create(t.Context(), &extensions.SandboxClaim{
				ObjectMeta: metav1.ObjectMeta{
					Name:        "dsh-" + user,
					Labels:      map[string]string{account.LabelManagedBy: account.ManagedByValue, account.LabelUser: user},
					Annotations: map[string]string{account.LabelManagedBy: account.ManagedByValue, account.AnnotationTokenHash: strings.Repeat("ab", 32), account.AnnotationSessionEpoch: "1"},
				},
				Spec: extensions.SandboxClaimSpec{WarmPoolRef: extensions.WarmPoolRef{Name: "no-such-pool"}},
			}, metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("create accounts: %v", err)
	}
}
