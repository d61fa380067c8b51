package platformtest

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/accountpath/authapid"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// startAuth starts auth API replica r, pod authapi-<r>, as the admin (its
// own RBAC is tested in its package), on its own listener, and waits until
// it is ready.
func (p *Platform) startAuth(t *testing.T, r int, o Options, logger *slog.Logger) {
	t.Helper()
	name := fmt.Sprintf("authapi-%d", r)
	ns := p.Sim.NS
	c := authapid.Defaults()
	c.ListenAddr, c.OpsAddr, c.PodName = "127.0.0.1:0", "localhost:0", name
	c.Namespace, c.WarmPool, c.TrustedProxies = ns, simtest.PoolName, "127.0.0.0/8"
	c.AllowedServiceAccounts = "system:serviceaccount:" + ns + ":" + nodeProxyAccount
	override(&c.AllowedServiceAccounts, o.AllowedServiceAccounts)
	c.CookieSecure, c.AllowInsecure, c.RateLimit, c.TokenReviewCacheTTL = false, true, 0, time.Second
	override(&c.SessionTTL, o.SessionTTL)
	override(&c.WakeTimeout, o.AuthWakeTimeout)
	override(&c.EntryCodeTTL, o.EntryCodeTTL)
	override(&c.Admins, o.Admins)
	override(&c.RoutingMode, string(o.Mode))
	if o.Mode == userorigin.Subdomain {
		c.UserDomain = o.UserDomain
	}
	if o.ShortIdle {
		c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = LeaseDuration, 2*time.Second, 500*time.Millisecond
		c.IdleTimeout, c.ReportInterval = IdleTimeout, ReportInterval
	}
	c.IdleCountsOpenConnections = o.IdleCountsOpenConnections
	override(&c.BusyAllowance, o.BusyAllowance)
	deps := authapid.Deps{
		Logger: logger.With("process", name), Kube: p.Sim.Core, Sandboxes: p.Sim.SB,
		SweepApart: !o.Sweep, Now: o.AuthClock,
	}
	if o.ObserveAuthRequest != nil {
		cfg := p.CP.AdminConfig()
		testkit.ObserveRequests(cfg, o.ObserveAuthRequest)
		var err error
		if deps.Sandboxes, err = sandboxapi.NewForConfig(cfg); err != nil {
			t.Fatalf("build %s's Sandboxes client: %v", name, err)
		}
	}
	auth, err := authapid.Assemble(c, deps)
	if err != nil {
		t.Fatalf("assemble %s: %v", name, err)
	}
	p.Sweepers = append(p.Sweepers, auth.Sweeper())
	testkit.Run(t, name, auth.Run)
	p.AuthURLs = append(p.AuthURLs, "http://"+auth.Addr())
	testkit.Eventually(t, name+" ready", auth.Ready)
}
