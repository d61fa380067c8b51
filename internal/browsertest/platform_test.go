package browsertest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/authapi"
	"github.com/sandgate/sandgate/internal/clustertest"
	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/nodeproxy"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sim/simtest"
)

// gatewayHost is the public host name the browser uses; Chromium maps it
// to the first node proxy's address (see newBrowser).
const gatewayHost = "gw.example.test"

// sessionTTL is the auth API's session token lifetime in these tests, short
// so that a test outlives a token and sees it renewed.
const sessionTTL = 3 * time.Second

// verifierLeeway is the node proxies' clock leeway on token expiry.
const verifierLeeway = time.Second

// platform is the full local platform, as internal/nodeproxy's end-to-end
// tests build it: the simulated cluster (a warm pool of two), the auth API,
// and one node proxy per simulated node running as the nodeproxy
// ServiceAccount with its read-only RBAC.
type platform struct {
	t     *testing.T
	ns    string
	kube  kubernetes.Interface
	nodes []*platformNode
	logs  *syncBuffer
}

type platformNode struct {
	name string
	addr string // host:port on 127.0.1.<n>
	px   *nodeproxy.Proxy
	reg  *prometheus.Registry
}

// syncBuffer collects log output from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

func startPlatform(t *testing.T) *platform {
	t.Helper()
	cp := controlPlane(t)
	ctx := context.Background()
	sim := simtest.Start(t, cp, simtest.Options{Replicas: 2, TrustedHosts: gatewayHost})
	p := &platform{t: t, ns: sim.NS, kube: sim.Core, logs: &syncBuffer{}}
	logger := slog.New(slog.NewJSONHandler(p.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))

	auth, err := authapi.New(authapi.Options{
		Kube: p.kube, Sandboxes: sim.SB, Namespace: p.ns, WarmPool: "dsh-pool",
		SessionTTL: sessionTTL, WakeTimeout: 30 * time.Second, TokenReviewCacheTTL: time.Second,
		AllowedServiceAccounts: []string{"system:serviceaccount:" + p.ns + ":nodeproxy"},
		TrustedProxies:         []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Logger:                 logger.With("process", "authapi"),
	})
	if err != nil {
		t.Fatal(err)
	}
	authCtx, stopAuth := context.WithCancel(ctx)
	authDone := make(chan error, 1)
	go func() { authDone <- auth.Run(authCtx) }()
	authLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	authSrv := &http.Server{Handler: auth.Handler()}
	go authSrv.Serve(authLn)
	t.Cleanup(func() { authSrv.Close(); stopAuth(); <-authDone })
	authURL := "http://" + authLn.Addr().String()
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
		}
		hs, err := handshake.New(handshake.Options{LogRoot: sim.Cluster.Kubelet.LogRoot(n.name), Registerer: n.reg})
		if err != nil {
			t.Fatal(err)
		}
		handshakers = append(handshakers, hs)
		idx, err := informer.New(informer.Options{
			Namespace: p.ns, NodeName: n.name,
			Claims: sb.SandboxClaims(p.ns), Sandboxes: sb.Sandboxes(p.ns),
			Pods: kube.CoreV1().Pods(p.ns), Nodes: kube.CoreV1().Nodes(),
			OnPodGone: hs.ForgetPod, OnUserGone: hs.ForgetUser,
		})
		if err != nil {
			t.Fatal(err)
		}
		if n.px, err = nodeproxy.New(nodeproxy.Options{
			NodeName: n.name, Directory: idx, Verifier: ver, Handshaker: hs, Peers: idx,
			ReadyChecks: []nodeproxy.ReadyCheck{{Name: "informers", Ready: idx.HasSynced}, {Name: "jwks", Ready: fetcher.Ready}},
			AuthAPI:     authURL, ServiceAccountToken: func() (string, error) { return saToken, nil },
			PeerPort: port, Logger: logger.With("process", n.name), Registerer: n.reg, Gatherer: n.reg,
			RenewTimeout: 15 * time.Second, DrainTimeout: 2 * time.Second,
		}); err != nil {
			t.Fatal(err)
		}
		run(func() error { return idx.Run(runCtx) })
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
