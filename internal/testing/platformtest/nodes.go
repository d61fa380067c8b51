package platformtest

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandgate/sandgate/internal/accountpath/authapi"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/requestpath/nodeproxyd"
	"github.com/sandgate/sandgate/internal/testing/clustertest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// nodeProxyAccount is the ServiceAccount the node proxies run as.
const nodeProxyAccount = "nodeproxy"

// Node is one node's proxy: the shipped assembly, its addresses, the
// informer index it routes with and its metrics.
type Node struct {
	Name     string
	Addr     string // its proxy listener, host:port
	Ops      string // its ops listener
	Egress   string // its egress listener, with Options.EgressProviders
	Index    *informer.Index
	Registry *prometheus.Registry
	Daemon   *nodeproxyd.Daemon
}

// startNodes starts a node proxy on each simulated node, listening on the
// node's InternalIP, all on one port, and waits until all are ready.
func (p *Platform) startNodes(t *testing.T, o Options, logger *slog.Logger) {
	t.Helper()
	base, sources := p.nodeIdentity(t, o)
	kubelet, port := p.Sim.Cluster.Kubelet, "0"
	for i, name := range kubelet.NodeNames() {
		n := &Node{Name: name, Registry: prometheus.NewRegistry()}
		ln, err := net.Listen("tcp", net.JoinHostPort(kubelet.NodeIP(name), port))
		if err != nil {
			t.Fatalf("listen on %s's address: %v", name, err)
		}
		n.Addr = ln.Addr().String()
		_, port, _ = net.SplitHostPort(n.Addr)
		c := base
		c.NodeName, c.ListenAddr, c.OpsAddr = n.Name, n.Addr, "127.0.0.1:0"
		c.AuthAPIURL, c.LogRoot = p.AuthURLs[i%len(p.AuthURLs)], kubelet.LogRoot(n.Name)
		if o.Mode == userorigin.Subdomain {
			c.PublicOrigin = o.PublicOrigin(port)
		}
		if o.EgressProviders != "" {
			c.Egress.Providers, c.Egress.KeysDir = o.EgressProviders, o.EgressKeysDir
			c.Egress.Addr = net.JoinHostPort(kubelet.NodeIP(name), "0")
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		if n.Daemon, err = nodeproxyd.Assemble(c, nodeproxyd.Deps{
			Logger: logger.With("process", n.Name), Registry: n.Registry, Listener: ln, Sources: sources,
		}); err != nil {
			t.Fatalf("assemble %s's node proxy: %v", n.Name, err)
		}
		n.Index, n.Ops, n.Egress = n.Daemon.Index(), n.Daemon.OpsAddr(), n.Daemon.EgressAddr()
		testkit.Run(t, n.Name+"'s node proxy", n.Daemon.Run)
		p.Nodes = append(p.Nodes, n)
	}
	p.Port = port
	for _, n := range p.Nodes {
		testkit.Eventually(t, n.Name+" ready", func() bool { return testkit.Status("http://"+n.Ops+"/readyz") == http.StatusOK })
	}
}

// nodeIdentity grants the node proxies' ServiceAccount its read-only RBAC
// and returns the config every node proxy shares (with a token file for
// the auth API's internal audience and the hop key file) and its API
// clients.
func (p *Platform) nodeIdentity(t *testing.T, o Options) (nodeproxyd.Config, nodeproxyd.Clients) {
	t.Helper()
	ctx, ns := context.Background(), p.Sim.NS
	clustertest.GrantNodeProxy(t, p.Sim.Core, ns)
	cfg, err := p.CP.ServiceAccountConfig(ctx, ns, nodeProxyAccount)
	if err != nil {
		t.Fatal(err)
	}
	if o.ObserveNodeRequest != nil {
		testkit.ObserveRequests(cfg, o.ObserveNodeRequest)
	}
	token, err := p.CP.ServiceAccountToken(ctx, ns, nodeProxyAccount, 3600, authapi.DefaultInternalAudience)
	if err != nil {
		t.Fatal(err)
	}
	c := nodeproxyd.Defaults()
	c.Namespace, c.SATokenFile = ns, writeFile(t, "token", []byte(token))
	if o.HopKey != nil {
		c.HopKeyFile = writeFile(t, "hop.key", o.HopKey)
	}
	c.CookieSecure, c.AllowInsecure, c.ShutdownTimeout = false, true, 2*time.Second
	override(&c.RoutingMode, string(o.Mode))
	if o.Mode == userorigin.Subdomain {
		c.UserDomain = o.UserDomain
	}
	override(&c.WakeTimeout, o.NodeWakeTimeout)
	if o.ShortIdle {
		c.ReportInterval = ReportInterval
	}
	kube, sb := testkit.Clients(t, cfg)
	return c, nodeproxyd.Clients{Kube: kube, Sandboxes: sb}
}

// writeFile writes data to a new file named name, private to its owner,
// and returns its path.
func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
