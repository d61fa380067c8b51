// Package lifecycle measures the account lifecycle on a real kube-apiserver
// and etcd with the simulated cluster (internal/testing/sim): 100 concurrent
// signups against the real auth API, the wake latency a request sees
// beyond the simulated pod start delay, and how long after IDLE_TIMEOUT
// the sweeper suspends an idle sandbox. It runs the shipped assemblies
// (internal/accountpath/authapid: the auth API with a leader-elected sweeper;
// internal/requestpath/nodeproxyd: a node proxy per simulated node with an activity
// reporter and wake-on-connect), with admin credentials since RBAC is not
// measured.
package lifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/accountpath/authapi"
	"github.com/sandgate/sandgate/internal/accountpath/authapid"
	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
	"github.com/sandgate/sandgate/internal/requestpath/nodeproxyd"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/testing/sim/cluster"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
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
	if err := p.startAuth(ctx, log); err != nil {
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
		if err := p.startProxy(ctx, fmt.Sprintf("%s-%d", namespace, i), ln, c, tokenFile, log); err != nil {
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

// startAuth runs one auth API replica with a sweeper, the shipped
// assembly with the bench's timings and no rate limit or signup budget:
// the bench signs up Signups accounts at once from one client.
func (p *platform) startAuth(ctx context.Context, log *slog.Logger) error {
	c := authapid.Defaults()
	c.ListenAddr, c.OpsAddr, c.PodName = "127.0.0.1:0", "localhost:0", "authapi-0"
	c.Namespace, c.WarmPool, c.TrustedProxies = namespace, pool, "127.0.0.0/8"
	c.AllowedServiceAccounts = "system:serviceaccount:" + namespace + ":nodeproxy"
	c.CookieSecure, c.AllowInsecure, c.RateLimit, c.SignupBudget = false, true, 0, 1<<20
	c.WakeTimeout, c.IdleTimeout, c.ReportInterval = 30*time.Second, IdleTimeout, ReportInterval
	c.LeaseDuration, c.RenewDeadline, c.RetryPeriod = 3*time.Second, 2*time.Second, 500*time.Millisecond
	auth, err := authapid.Assemble(c, authapid.Deps{Logger: log, Kube: p.kube, Sandboxes: p.sb})
	if err != nil {
		return fmt.Errorf("assemble auth API: %w", err)
	}
	p.run(ctx, auth.Run)
	p.authURL = "http://" + auth.Addr()
	return poll(ctx, 30*time.Second, func() (bool, error) { return auth.Ready(), nil })
}

// startProxy runs node's proxy on ln, the shipped assembly with the
// bench's wake timeout and report interval.
func (p *platform) startProxy(ctx context.Context, node string, ln net.Listener, c *cluster.Cluster, tokenFile string, log *slog.Logger) error {
	cfg := nodeproxyd.Defaults()
	cfg.NodeName, cfg.Namespace, cfg.ListenAddr, cfg.OpsAddr = node, namespace, ln.Addr().String(), "127.0.0.1:0"
	cfg.AuthAPIURL, cfg.SATokenFile, cfg.LogRoot = p.authURL, tokenFile, c.Kubelet.LogRoot(node)
	cfg.CookieSecure, cfg.AllowInsecure = false, true
	cfg.WakeTimeout, cfg.ReportInterval, cfg.ShutdownTimeout = 30*time.Second, ReportInterval, time.Second
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("node proxy settings: %w", err)
	}
	d, err := nodeproxyd.Assemble(cfg, nodeproxyd.Deps{Logger: log, Listener: ln, Sources: nodeproxyd.Clients{Kube: p.kube, Sandboxes: p.sb}})
	if err != nil {
		return fmt.Errorf("assemble node proxy: %w", err)
	}
	p.run(ctx, d.Run)
	p.proxies = append(p.proxies, ln.Addr().String())
	return poll(ctx, 30*time.Second, func() (bool, error) { return ready(d.OpsAddr()), nil })
}

// run runs f until the platform closes.
func (p *platform) run(ctx context.Context, f func(context.Context) error) {
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- f(runCtx) }()
	p.stop = append(p.stop, func() { stop(); <-done })
}

// ready reports whether the ops listener at addr answers /readyz with 200.
func ready(addr string) bool {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
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
