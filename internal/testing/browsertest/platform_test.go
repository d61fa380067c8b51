package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/accountpath/authapi"
	"github.com/sandgate/sandgate/internal/accountpath/authapid"
	"github.com/sandgate/sandgate/internal/accountpath/sweeper"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/requestpath/nodeproxyd"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/clustertest"
	"github.com/sandgate/sandgate/internal/testing/logbuf"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// gatewayHost is the public host name the browser uses; Chromium maps it
// to the first node proxy's address (see startBrowser).
const gatewayHost = "gw.example.test"

// userDomain is USER_DOMAIN in subdomain routing: the agent of <user> is
// at <user>.userDomain, which Chromium maps to the second node proxy's
// address, so that a user origin and the main origin are served by
// different node proxies (see startBrowser).
const userDomain = "u.example.test"

// sessionTTL is the auth API's session token lifetime in these tests, short
// so that a test outlives a token and sees it renewed.
const sessionTTL = 3 * time.Second

// Idle suspend and wake timings. The sweeper runs only while a flow asks
// for it (platform.sweep), so the short idle timeout cannot suspend an
// agent in the middle of another flow. A resume takes well over the node
// proxies' wake timeout, so a navigation to a woken agent is answered with
// the waking page before the agent opens.
const (
	idleTimeout    = 3 * time.Second
	reportInterval = time.Second
	wakeTimeout    = 2 * time.Second
	resumeDelay    = 10 * time.Second
)

// platform is the full local platform, as internal/requestpath/nodeproxy's end-to-end
// tests build it: the simulated cluster (a warm pool of two), the auth API
// with its idle sweeper, and one node proxy per simulated node running as
// the nodeproxy ServiceAccount with its read-only RBAC, reporting activity
// and waking suspended sandboxes; all in one routing mode (ROUTING_MODE).
type platform struct {
	t       *testing.T
	mode    userorigin.Mode
	port    string // the node proxies' common port
	authURL string
	ns      string
	kube    kubernetes.Interface
	sb      *sandboxapi.Client
	sweeper *sweeper.Sweeper
	nodes   []*platformNode
	logs    *logbuf.Buffer
}

// platformNode is one node's proxy: its addresses, the informer index it
// routes and holds requests with, and its metrics.
type platformNode struct {
	name string
	addr string // host:port on 127.0.1.<n>
	ops  string // its ops listener
	idx  *informer.Index
	reg  *prometheus.Registry
}

// startPlatform starts the platform in routing mode with the sweeper
// stopped (see sweep); everything stops when t ends. The auth API and the
// node proxies are the shipped assemblies, configured as the manifests
// configure them but for the short timings above.
func startPlatform(t *testing.T, mode userorigin.Mode) *platform {
	t.Helper()
	cp := testkit.ControlPlane(t)
	ctx := context.Background()
	sim := simtest.Start(t, cp, simtest.Options{
		Replicas: 2, TrustedHosts: gatewayHost, Delays: controller.Delays{Resume: resumeDelay},
	})
	p := &platform{t: t, mode: mode, ns: sim.NS, kube: sim.Core, sb: sim.SB, logs: &logbuf.Buffer{}}
	logger := slog.New(slog.NewJSONHandler(p.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	p.authURL = p.startAuth(logger)

	clustertest.GrantNodeProxy(t, p.kube, p.ns)
	cfg, err := cp.ServiceAccountConfig(ctx, p.ns, "nodeproxy")
	if err != nil {
		t.Fatal(err)
	}
	saToken, err := cp.ServiceAccountToken(ctx, p.ns, "nodeproxy", 3600, authapi.DefaultInternalAudience)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(saToken), 0o600); err != nil {
		t.Fatal(err)
	}
	kube, sb := testkit.Clients(t, cfg)
	port := 0
	for i := 1; i <= 2; i++ {
		n := &platformNode{name: fmt.Sprintf("%s-%d", p.ns, i), reg: prometheus.NewRegistry()}
		ln, err := net.Listen("tcp", net.JoinHostPort(fmt.Sprintf("127.0.1.%d", i), fmt.Sprint(port)))
		if err != nil {
			t.Fatalf("listen on node %d: %v", i, err)
		}
		n.addr = ln.Addr().String()
		if port == 0 {
			port = ln.Addr().(*net.TCPAddr).Port
			p.port = fmt.Sprint(port)
		}
		c := nodeproxyd.Defaults()
		c.NodeName, c.Namespace, c.ListenAddr, c.OpsAddr = n.name, p.ns, n.addr, "127.0.0.1:0"
		c.AuthAPIURL, c.SATokenFile, c.LogRoot = p.authURL, tokenFile, sim.Cluster.Kubelet.LogRoot(n.name)
		c.CookieSecure, c.AllowInsecure = false, true
		c.ShutdownTimeout, c.WakeTimeout, c.ReportInterval = 2*time.Second, wakeTimeout, reportInterval
		c.RoutingMode = string(mode)
		if mode == userorigin.Subdomain {
			c.UserDomain, c.PublicOrigin = userDomain, p.mainOrigin()
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		d, err := nodeproxyd.Assemble(c, nodeproxyd.Deps{
			Logger: logger.With("process", n.name), Registry: n.reg, Listener: ln,
			Sources: nodeproxyd.Clients{Kube: kube, Sandboxes: sb},
		})
		if err != nil {
			t.Fatal(err)
		}
		n.idx, n.ops = d.Index(), d.OpsAddr()
		testkit.Run(t, n.name+"'s node proxy", d.Run)
		p.nodes = append(p.nodes, n)
	}
	for _, n := range p.nodes {
		testkit.Eventually(t, n.name+" ready", func() bool { return testkit.Status("http://"+n.ops+"/readyz") == http.StatusOK })
	}
	return p
}

// startAuth runs the auth API, as replica authapi-0, with its sweeper
// held apart (see sweep), and returns its URL.
func (p *platform) startAuth(logger *slog.Logger) string {
	t := p.t
	c := authapid.Defaults()
	c.ListenAddr, c.OpsAddr, c.PodName = "127.0.0.1:0", "localhost:0", "authapi-0"
	c.Namespace, c.WarmPool, c.TrustedProxies = p.ns, "dsh-pool", "127.0.0.0/8"
	c.AllowedServiceAccounts = "system:serviceaccount:" + p.ns + ":nodeproxy"
	c.CookieSecure, c.AllowInsecure, c.RateLimit = false, true, 0
	c.SessionTTL, c.WakeTimeout, c.TokenReviewCacheTTL = sessionTTL, 30*time.Second, time.Second
	c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = 3*time.Second, 2*time.Second, 500*time.Millisecond
	c.IdleTimeout, c.ReportInterval = idleTimeout, reportInterval
	c.RoutingMode = string(p.mode)
	if p.mode == userorigin.Subdomain {
		c.UserDomain = userDomain
	}
	auth, err := authapid.Assemble(c, authapid.Deps{
		Logger: logger.With("process", "authapi"), Kube: p.kube, Sandboxes: p.sb, SweepApart: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	p.sweeper = auth.Sweeper()
	testkit.Run(t, "auth API", auth.Run)
	testkit.Eventually(t, "auth API ready", auth.Ready)
	return "http://" + auth.Addr()
}

// subdomain reports whether the platform runs in subdomain routing.
func (p *platform) subdomain() bool { return p.mode == userorigin.Subdomain }

// mainOrigin is the origin of the landing page and the auth API.
func (p *platform) mainOrigin() string { return "http://" + net.JoinHostPort(gatewayHost, p.port) }

// agentURL is the URL of rest (a relative path, "" for the agent's home)
// in user's agent: under /u/<user>/ on the main origin in path routing,
// on the user's own origin in subdomain routing.
func (p *platform) agentURL(user, rest string) string {
	if p.subdomain() {
		return "http://" + net.JoinHostPort(user+"."+userDomain, p.port) + "/" + rest
	}
	return p.mainOrigin() + "/u/" + user + "/" + rest
}

// sweep runs the auth API's sweeper, which then leads (it is the only
// replica) and suspends every agent idle for idleTimeout, until t ends or
// stop is called; stop may be called more than once. A platform's sweeper
// runs once: call sweep at most once.
func (p *platform) sweep(t *testing.T) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.sweeper.Run(ctx) }()
	stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sweeper: %v", err)
		}
	})
	t.Cleanup(stop)
	return stop
}

// waitSuspended waits until user's Sandbox is suspended with its pod gone
// and every node proxy's caches see it suspended, or ctx ends.
func (p *platform) waitSuspended(ctx context.Context, user string) error {
	for {
		missing := p.suspendMissing(ctx, user)
		if missing == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s's agent to be suspended: %w (%s)", user, ctx.Err(), missing)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// suspendMissing says what is still missing for user's agent to count as
// suspended, or "" once nothing is.
func (p *platform) suspendMissing(ctx context.Context, user string) string {
	var name string
	for _, n := range p.nodes {
		e, err := n.idx.Lookup(user)
		if err != nil {
			return fmt.Sprintf("%s: %v", n.name, err)
		}
		if e.Route.State != informer.StateSuspended {
			return fmt.Sprintf("%s sees the sandbox %s", n.name, e.Route.State)
		}
		name = e.Route.Sandbox
	}
	sb, err := p.sb.Sandboxes(p.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	if c := simtest.Condition(sb.Status.Conditions, agents.ConditionSuspended); c.Status != metav1.ConditionTrue {
		return fmt.Sprintf("Sandbox %s has Suspended=%q (%s)", name, c.Status, c.Reason)
	}
	return ""
}

// authRequests counts the auth API's access-log lines so far for route
// that answered status.
func (p *platform) authRequests(route string, status int) int {
	n := 0
	for line := range bytes.Lines(p.logs.Bytes()) {
		var l struct {
			Msg, Component, Route string
			Status                int
		}
		if json.Unmarshal(line, &l) == nil && l.Msg == "request" && l.Component == "authapi" && l.Route == route && l.Status == status {
			n++
		}
	}
	return n
}

// renewals sums the node proxies' successful session renewals.
func (p *platform) renewals() float64 {
	var sum float64
	for _, n := range p.nodes {
		ok, _ := testkit.Gathered(p.t, n.reg, "sandgate_nodeproxy_renewals_total", map[string]string{"result": "ok"})
		sum += ok
	}
	return sum
}
