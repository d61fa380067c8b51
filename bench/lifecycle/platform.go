// Package lifecycle measures the account lifecycle on a real kube-apiserver
// and etcd with the simulated cluster (internal/sim): 100 concurrent
// signups against the real auth API, the wake latency a request sees
// beyond the simulated pod start delay, and how long after IDLE_TIMEOUT
// the sweeper suspends an idle sandbox. It wires the platform as
// cmd/authapi and cmd/nodeproxy do (auth API with a leader-elected
// sweeper, a node proxy per simulated node with an activity reporter and
// wake-on-connect), with admin credentials since RBAC is not measured.
package lifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/authapi"
	"github.com/sandgate/sandgate/internal/controlplane"
	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/nodeproxy"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sim/cluster"
	"github.com/sandgate/sandgate/internal/sim/controller"
	"github.com/sandgate/sandgate/internal/sweeper"
)

// Timings of the measured platform.
const (
	// ResumeDelay is the simulated pod start delay of a woken sandbox.
	ResumeDelay = time.Second
	// IdleTimeout is the sweeper's IDLE_TIMEOUT.
	IdleTimeout = 3 * time.Second
	// ReportInterval is how often node proxies report activity.
	ReportInterval = time.Second
	// Host is the public host the apps trust.
	Host = "gateway.example"
	// namespace holds the accounts; pool names the warm pool.
	namespace = "bench"
	pool      = "dsh-pool"
	poolSize  = 4
)

// platform is the running platform.
type platform struct {
	kube    kubernetes.Interface
	sb      *sandboxapi.Client
	authURL string
	proxies []string // node proxy addresses
	stop    []func()
}

// close stops everything, last started first.
func (p *platform) close() {
	for i := len(p.stop) - 1; i >= 0; i-- {
		p.stop[i]()
	}
}

// start brings the platform up on cp in dir.
func start(ctx context.Context, cp *controlplane.ControlPlane, dir string, log *slog.Logger) (*platform, error) {
	p := &platform{}
	var err error
	if p.kube, err = kubernetes.NewForConfig(cp.AdminConfig()); err != nil {
		return nil, fmt.Errorf("build core client: %w", err)
	}
	if p.sb, err = sandboxapi.NewForConfig(cp.AdminConfig()); err != nil {
		return nil, fmt.Errorf("build sandbox client: %w", err)
	}
	if _, err := p.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create namespace: %w", err)
	}
	c, err := cluster.Start(ctx, cluster.Options{
		Config: cp.AdminConfig(), Name: namespace, Namespaces: []string{namespace}, Nodes: 2,
		LogDir: filepath.Join(dir, "logs"), DataDir: filepath.Join(dir, "data"),
		Delays: controller.Delays{Resume: ResumeDelay}, Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("start simulated cluster: %w", err)
	}
	p.stop = append(p.stop, func() { _ = c.Stop() })
	if err := p.createPool(ctx); err != nil {
		return p, err
	}
	if err := p.startAuth(ctx, cp, log); err != nil {
		return p, err
	}
	saToken, err := cp.ServiceAccountToken(ctx, namespace, "nodeproxy", 3600, authapi.DefaultInternalAudience)
	if err != nil {
		return p, err
	}
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(saToken), 0o600); err != nil {
		return p, fmt.Errorf("write token: %w", err)
	}
	// Node proxies listen on their simulated node's IP (127.0.1.i), all on
	// one port, as a DaemonSet's do, so a hop reaches the other one.
	port := 0
	for i := 1; i <= 2; i++ {
		ln, err := net.Listen("tcp", net.JoinHostPort(fmt.Sprintf("127.0.1.%d", i), fmt.Sprint(port)))
		if err != nil {
			return p, fmt.Errorf("listen on node %d: %w", i, err)
		}
		port = ln.Addr().(*net.TCPAddr).Port
		if err := p.startProxy(ctx, fmt.Sprintf("%s-%d", namespace, i), ln, c, saToken, tokenFile, log); err != nil {
			return p, err
		}
	}
	return p, nil
}

// createPool creates the template and the warm pool and waits for the
// spares.
func (p *platform) createPool(ctx context.Context) error {
	if err := cluster.CreatePool(ctx, p.sb, namespace, pool, poolSize, Host); err != nil {
		return err
	}
	return poll(ctx, time.Minute, func() (bool, error) {
		wp, err := p.sb.SandboxWarmPools(namespace).Get(ctx, pool, metav1.GetOptions{})
		return err == nil && wp.Status.ReadyReplicas == poolSize, err
	})
}

// startAuth runs one auth API replica with a sweeper.
func (p *platform) startAuth(ctx context.Context, cp *controlplane.ControlPlane, log *slog.Logger) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	sw, err := sweeper.New(sweeper.Options{
		Namespace: namespace, Sandboxes: p.sb.Sandboxes(namespace), Claims: p.sb.SandboxClaims(namespace),
		Leases: p.kube.CoordinationV1(), Identity: sweeper.Identity("authapi-0", ln.Addr().String()),
		LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond,
		IdleTimeout: IdleTimeout, ReportInterval: ReportInterval, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("build sweeper: %w", err)
	}
	auth, err := authapi.New(authapi.Options{
		Kube: p.kube, Sandboxes: p.sb, Namespace: namespace, WarmPool: pool, WakeTimeout: 30 * time.Second,
		AllowedServiceAccounts: []string{"system:serviceaccount:" + namespace + ":nodeproxy"},
		TrustedProxies:         []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Activity:               sw, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("build auth API: %w", err)
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	authDone, swDone := make(chan error, 1), make(chan error, 1)
	go func() { authDone <- auth.Run(runCtx) }()
	go func() { swDone <- sw.Run(runCtx) }()
	srv := &http.Server{Handler: auth.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	p.stop = append(p.stop, func() { srv.Close(); stop(); <-authDone; <-swDone })
	p.authURL = "http://" + ln.Addr().String()
	return poll(ctx, 30*time.Second, func() (bool, error) { return auth.Ready(), nil })
}

// startProxy runs node's proxy on ln with wake-on-connect and activity reports.
func (p *platform) startProxy(ctx context.Context, node string, ln net.Listener, c *cluster.Cluster, saToken, tokenFile string, log *slog.Logger) error {
	fetcher, err := jwt.NewJWKSFetcher(jwt.FetcherOptions{URL: p.authURL + "/.well-known/jwks.json"})
	if err != nil {
		return fmt.Errorf("build JWKS fetcher: %w", err)
	}
	ver, err := jwt.NewVerifier(jwt.VerifierOptions{Keys: fetcher, Issuer: authapi.DefaultIssuer, Audience: authapi.DefaultAudience, Leeway: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("build verifier: %w", err)
	}
	hs, err := handshake.New(handshake.Options{LogRoot: c.Kubelet.LogRoot(node)})
	if err != nil {
		return fmt.Errorf("build handshaker: %w", err)
	}
	idx, err := informer.New(informer.Options{
		Namespace: namespace, NodeName: node,
		Claims: p.sb.SandboxClaims(namespace), Sandboxes: p.sb.Sandboxes(namespace),
		Pods: p.kube.CoreV1().Pods(namespace), Nodes: p.kube.CoreV1().Nodes(),
		OnPodGone: hs.ForgetPod, OnUserGone: hs.ForgetUser,
	})
	if err != nil {
		return fmt.Errorf("build index: %w", err)
	}
	tracker := activity.New(activity.Options{Quiet: ReportInterval})
	rep, err := activity.NewReporter(activity.ReporterOptions{
		Tracker: tracker, Node: node, URL: p.authURL + "/internal/v1/activity",
		TokenFile: tokenFile, Interval: ReportInterval, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("build reporter: %w", err)
	}
	px, err := nodeproxy.New(nodeproxy.Options{
		NodeName: node, Directory: idx, Verifier: ver, Handshaker: hs, Peers: idx,
		AuthAPI: p.authURL, ServiceAccountToken: func() (string, error) { return saToken, nil },
		Waiter: idx, WakeTimeout: 30 * time.Second, Activity: tracker, Namespace: namespace,
		PeerPort: ln.Addr().(*net.TCPAddr).Port, Logger: log, DrainTimeout: time.Second,
	})
	if err != nil {
		return fmt.Errorf("build node proxy: %w", err)
	}
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 4)
	for _, run := range []func() error{
		func() error { return fetcher.Start(runCtx) },
		func() error { return idx.Run(runCtx) },
		func() error { return rep.Run(runCtx) },
		func() error { return px.Serve(runCtx, ln) },
	} {
		go func() { done <- run() }()
	}
	p.stop = append(p.stop, func() {
		stop()
		for range 4 {
			<-done
		}
		hs.Close()
	})
	p.proxies = append(p.proxies, ln.Addr().String())
	return poll(ctx, 30*time.Second, func() (bool, error) { return idx.HasSynced() && fetcher.Ready(), nil })
}

// poll checks cond every 20ms until it holds, fails, or timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		last = err
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %v (last error: %v)", timeout, last)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
