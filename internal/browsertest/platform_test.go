package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/authapi"
	"github.com/sandgate/sandgate/internal/clustertest"
	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/logbuf"
	"github.com/sandgate/sandgate/internal/nodeproxy"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sim/controller"
	"github.com/sandgate/sandgate/internal/sim/simtest"
	"github.com/sandgate/sandgate/internal/sweeper"
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

// verifierLeeway is the node proxies' clock leeway on token expiry.
const verifierLeeway = time.Second

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

// platform is the full local platform, as internal/nodeproxy's end-to-end
// tests build it: the simulated cluster (a warm pool of two), the auth API
// with its idle sweeper, and one node proxy per simulated node running as
// the nodeproxy ServiceAccount with its read-only RBAC, reporting activity
// and waking suspended sandboxes; all in one routing mode (ROUTING_MODE).
type platform struct {
	t       *testing.T
	mode    userorigin.Mode
	port    string // the node proxies' common port
	ns      string
	kube    kubernetes.Interface
	sb      *sandboxapi.Client
	sweeper *sweeper.Sweeper
	nodes   []*platformNode
	logs    *logbuf.Buffer
}

// platformNode is one node's proxy and the informer index it routes and
// holds requests with.
type platformNode struct {
	name string
	addr string // host:port on 127.0.1.<n>
	idx  *informer.Index
	px   *nodeproxy.Proxy
	reg  *prometheus.Registry
}

// startPlatform starts the platform in routing mode with the sweeper
// stopped (see sweep); everything stops when t ends.
func startPlatform(t *testing.T, mode userorigin.Mode) *platform {
	t.Helper()
	cp := controlPlane(t)
	ctx := context.Background()
	sim := simtest.Start(t, cp, simtest.Options{
		Replicas: 2, TrustedHosts: gatewayHost, Delays: controller.Delays{Resume: resumeDelay},
	})
	p := &platform{t: t, mode: mode, ns: sim.NS, kube: sim.Core, sb: sim.SB, logs: &logbuf.Buffer{}}
	logger := slog.New(slog.NewJSONHandler(p.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))

	authLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	authURL := "http://" + authLn.Addr().String()
	if p.sweeper, err = sweeper.New(sweeper.Options{
		Namespace: p.ns, Sandboxes: p.sb.Sandboxes(p.ns), Claims: p.sb.SandboxClaims(p.ns),
		Leases: p.kube.CoordinationV1(), Identity: sweeper.Identity("authapi-0", authLn.Addr().String()),
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond,
		IdleTimeout: idleTimeout, ReportInterval: reportInterval,
		Logger: logger.With("process", "authapi"),
	}); err != nil {
		t.Fatal(err)
	}
	authOpts := authapi.Options{
		Kube: p.kube, Sandboxes: p.sb, Namespace: p.ns, WarmPool: "dsh-pool",
		SessionTTL: sessionTTL, WakeTimeout: 30 * time.Second, TokenReviewCacheTTL: time.Second,
		AllowedServiceAccounts: []string{"system:serviceaccount:" + p.ns + ":nodeproxy"},
		TrustedProxies:         []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Activity:               p.sweeper,
		Logger:                 logger.With("process", "authapi"),
		RoutingMode:            mode,
	}
	if mode == userorigin.Subdomain {
		authOpts.UserDomain = userDomain
	}
	auth, err := authapi.New(authOpts)
	if err != nil {
		t.Fatal(err)
	}
	authCtx, stopAuth := context.WithCancel(ctx)
	authDone := make(chan error, 1)
	go func() { authDone <- auth.Run(authCtx) }()
	authSrv := &http.Server{Handler: auth.Handler()}
	go authSrv.Serve(authLn)
	t.Cleanup(func() { authSrv.Close(); stopAuth(); <-authDone })
	waitFor(t, 60*time.Second, "auth API ready", auth.Ready)

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
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandboxapi.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fetcher, err := jwt.NewJWKSFetcher(jwt.FetcherOptions{URL: authURL + "/.well-known/jwks.json"})
	if err != nil {
		t.Fatal(err)
	}
	ver, err := jwt.NewVerifier(jwt.VerifierOptions{Keys: fetcher, Issuer: authapi.DefaultIssuer, Audience: authapi.DefaultAudience, Leeway: verifierLeeway})
	if err != nil {
		t.Fatal(err)
	}
	originVer, err := jwt.NewVerifier(jwt.VerifierOptions{Keys: fetcher, Issuer: authapi.DefaultIssuer, Audience: jwt.OriginAudience(authapi.DefaultAudience), Leeway: verifierLeeway})
	if err != nil {
		t.Fatal(err)
	}
	entryVer, err := jwt.NewVerifier(jwt.VerifierOptions{Keys: fetcher, Issuer: authapi.DefaultIssuer, Audience: jwt.EntryAudience(authapi.DefaultAudience), Leeway: verifierLeeway})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var done []chan error
	var handshakers []*handshake.Handshaker
	t.Cleanup(func() {
		stop()
		for _, d := range done {
			if err := <-d; err != nil {
				t.Errorf("node proxy: %v", err)
			}
		}
		for _, hs := range handshakers {
			hs.Close()
		}
	})
	run := func(f func() error) {
		d := make(chan error, 1)
		done = append(done, d)
		go func() { d <- f() }()
	}
	run(func() error { return fetcher.Start(runCtx) })

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
		hs, err := handshake.New(handshake.Options{LogRoot: sim.Cluster.Kubelet.LogRoot(n.name), Registerer: n.reg})
		if err != nil {
			t.Fatal(err)
		}
		handshakers = append(handshakers, hs)
		if n.idx, err = informer.New(informer.Options{
			Namespace: p.ns, NodeName: n.name,
			Claims: sb.SandboxClaims(p.ns), Sandboxes: sb.Sandboxes(p.ns),
			Pods: kube.CoreV1().Pods(p.ns), Nodes: kube.CoreV1().Nodes(),
			OnPodGone: hs.ForgetPod, OnUserGone: hs.ForgetUser,
		}); err != nil {
			t.Fatal(err)
		}
		tracker := activity.New(activity.Options{Quiet: reportInterval})
		rep, err := activity.NewReporter(activity.ReporterOptions{
			Tracker: tracker, Node: n.name, URL: authURL + "/internal/v1/activity",
			TokenFile: tokenFile, Interval: reportInterval,
			Logger: logger.With("process", n.name), Registerer: n.reg,
		})
		if err != nil {
			t.Fatal(err)
		}
		opts := nodeproxy.Options{
			NodeName: n.name, Directory: n.idx, Verifier: ver, Handshaker: hs, Peers: n.idx,
			ReadyChecks: []nodeproxy.ReadyCheck{{Name: "informers", Ready: n.idx.HasSynced}, {Name: "jwks", Ready: fetcher.Ready}},
			AuthAPI:     authURL, ServiceAccountToken: func() (string, error) { return saToken, nil },
			PeerPort: port, Logger: logger.With("process", n.name), Registerer: n.reg, Gatherer: n.reg,
			RenewTimeout: 15 * time.Second, DrainTimeout: 2 * time.Second,
			Waiter: n.idx, WakeTimeout: wakeTimeout, Activity: tracker, Namespace: p.ns,
			RoutingMode: mode,
		}
		if mode == userorigin.Subdomain {
			opts.UserDomain, opts.PublicOrigin, opts.OriginVerifier, opts.EntryVerifier = userDomain, p.mainOrigin(), originVer, entryVer
		}
		if n.px, err = nodeproxy.New(opts); err != nil {
			t.Fatal(err)
		}
		run(func() error { return rep.Run(runCtx) })
		run(func() error { return n.idx.Run(runCtx) })
		run(func() error { return n.px.Serve(runCtx, ln) })
		p.nodes = append(p.nodes, n)
	}
	for _, n := range p.nodes {
		ops := n.px.OpsHandler()
		waitFor(t, 60*time.Second, n.name+" ready", func() bool {
			rec := httptest.NewRecorder()
			ops.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			return rec.Code == http.StatusOK
		})
	}
	return p
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
		mfs, err := n.reg.Gather()
		if err != nil {
			p.t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "sandgate_nodeproxy_renewals_total" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "result" && l.GetValue() == "ok" {
						sum += m.GetCounter().GetValue()
					}
				}
			}
		}
	}
	return sum
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
