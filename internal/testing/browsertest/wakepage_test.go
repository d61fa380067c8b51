package browsertest

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/platformtest"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// TestWakePage shows the waking page's two failure states (issue 51) in
// headless Chromium against the full local platform, each with its
// screenshots and the axe-core check: a wake the auth API refuses (it
// admits another ServiceAccount than the node proxies', as the demo did),
// and a wake that outlasts WAKE_TIMEOUT. Each has its own platform.
func TestWakePage(t *testing.T) {
	chromiumPath(t)
	t.Run("refused", func(t *testing.T) {
		// The shipped default, which is not the platform's node proxies.
		p := startWakePlatform(t, resumeDelay, "system:serviceaccount:sandgate-node:nodeproxy")
		s := suspendedAgent(t, p, "dora")
		s.do("waking page, wake refused", stepTimeout, func(ctx context.Context) error {
			if err := navigateWant(ctx, p.agentURL("dora", ""), 503, "the suspended agent (the refusal)"); err != nil {
				return err
			}
			return until(ctx, "the refusal", wakeRefused)
		})
		s.checkPage("waking page, wake refused")
		s.do("try again, refused again", stepTimeout, func(ctx context.Context) error {
			if err := click(ctx, `main nav a[href="/u/dora/"]`); err != nil {
				return err
			}
			return until(ctx, "the refusal again", `document.readyState === 'complete' && `+wakeRefused)
		})
	})
	t.Run("timeout", func(t *testing.T) {
		// The wake is accepted, but the sandbox's pod comes long after
		// the test.
		p := startWakePlatform(t, time.Hour, "")
		s := suspendedAgent(t, p, "erin")
		s.do("waking page", stepTimeout, func(ctx context.Context) error {
			if err := navigateWant(ctx, p.agentURL("erin", ""), 503, "the suspended agent (the waking page)"); err != nil {
				return err
			}
			return until(ctx, "the waking page", `document.title === 'Waking your agent'`)
		})
		s.do("waking page past WAKE_TIMEOUT", stepTimeout, func(ctx context.Context) error {
			return until(ctx, "the waking page past WAKE_TIMEOUT", `document.title === 'Still waking your agent'`+
				` && document.querySelector('meta[http-equiv="refresh"]')`+
				` && [...document.querySelectorAll('main nav a')].map(a => a.textContent).join('|') === 'Try again|Your account|Recreate workspace…'`)
		})
		s.checkPage("waking page past WAKE_TIMEOUT")
	})
}

// wakeRefused is true on the waking page of a refused wake: what failed,
// the steps with the failed one, no reload, and trying again first.
const wakeRefused = `document.title === 'Your agent could not be woken'` +
	` && document.querySelector('main [role="alert"]')?.textContent.includes('403 Forbidden')` +
	` && document.querySelector('.steps .step-failed')` +
	` && !document.querySelector('meta[http-equiv="refresh"]')` +
	` && document.querySelector('main nav a')?.textContent === 'Try again'`

// startWakePlatform starts the platform as startPlatform does, in path
// routing, with the resume delay given and, when not empty, the auth
// API's INTERNAL_ALLOWED_SERVICE_ACCOUNTS.
func startWakePlatform(t *testing.T, resume time.Duration, allowed string) *platform {
	t.Helper()
	return platformOf(t, userorigin.Path, platformtest.Start(t, platformtest.Options{
		Sim:  simtest.Options{Replicas: 1, TrustedHosts: gatewayHost, Delays: controller.Delays{Resume: resume}},
		Mode: userorigin.Path, NodeWakeTimeout: wakeTimeout, AllowedServiceAccounts: allowed,
	}))
}

// suspendedAgent signs user up in a browser on p and suspends the agent,
// as the sweeper does; it returns the browser's session.
func suspendedAgent(t *testing.T, p *platform, user string) *session {
	t.Helper()
	dir := artifactsDir(t)
	axeAvailable(t)
	t.Logf("screenshots: %s", dir)
	keepPlatformLog(t, dir, p)
	s := newSession(t, startBrowser(t, p), p, dir, user)
	s.do("signed up", agentTimeout, func(ctx context.Context) error {
		_, err := signUp(ctx, s, user)
		return err
	})
	s.do("agent suspended", agentTimeout, func(ctx context.Context) error {
		claim, err := p.sb.SandboxClaims(p.ns).Get(ctx, "dsh-"+user, metav1.GetOptions{})
		if err != nil {
			return err
		}
		name := claim.Status.Sandbox.Name
		patch := fmt.Appendf(nil, `{"spec":{"operatingMode":%q}}`, agents.OperatingModeSuspended)
		if _, err := p.sb.Sandboxes(p.ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("suspend %s's sandbox %q: %w", user, name, err)
		}
		return p.waitSuspended(ctx, user)
	})
	return s
}
