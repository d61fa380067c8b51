package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
)

// Binaries are the executables a cluster runs. All but the ones from the
// distribution (runc, the CNI plugins, iptables) are built from the Go
// module proxy into one directory by make.
type Binaries struct {
	// Dir holds etcd, kube-apiserver, kubectl, kube-controller-manager,
	// kube-scheduler, kubelet, kube-proxy, containerd, ctr,
	// containerd-shim-runc-v2 and local-path-provisioner.
	Dir string
	// Self is the sandgate-cluster binary, which runs each node.
	Self string
	// Runc and CNIDir are the distribution's runc and CNI plugins.
	Runc, CNIDir string
}

func (b Binaries) path(name string) string { return filepath.Join(b.Dir, name) }

// Images are the image tarballs every node imports, and the references of
// the ones the cluster itself runs.
type Images struct {
	// Tarballs are imported into every node's containerd.
	Tarballs []string
	// Pause, CoreDNS and Busybox are references of images in Tarballs:
	// pod sandboxes, cluster DNS and the storage provisioner's helper.
	Pause, CoreDNS, Busybox string
	// NetworkPolicies and KubeRouter are references of the NetworkPolicy
	// enforcers' images: kube-network-policies where the kernel can run it,
	// else kube-router's policy controller; empty leaves one out.
	NetworkPolicies, KubeRouter string
}

// Options configure Up.
type Options struct {
	Nodes    int
	Paths    Paths
	Binaries Binaries
	Images   Images
	// CRDDir holds CRDs installed before the nodes start; "" installs none.
	// CRDSource labels them for the log (controlplane.Options).
	CRDDir, CRDSource string
	Logger            *slog.Logger
}

// Cluster is a running local cluster.
type Cluster struct {
	opts  Options
	cp    *controlplane.ControlPlane
	nodes []node
	procs []*controlplane.Process
	log   *slog.Logger
	// Kubeconfig is a cluster-admin kubeconfig file.
	Kubeconfig string
	// Client is a cluster-admin client.
	Client kubernetes.Interface
	// PolicyEnforcer names the NetworkPolicy enforcer that runs; empty
	// when none does.
	PolicyEnforcer string
	// PolicyNote says why an enforcer was passed over or none runs.
	PolicyNote string
}

// Up removes what an earlier cluster left, then brings up the control
// plane, the nodes and the cluster's add-ons, and returns once every node
// is Ready and cluster DNS answers. The caller must call Stop.
func Up(ctx context.Context, o Options) (_ *Cluster, err error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Nodes < 1 || o.Nodes > 9 {
		return nil, fmt.Errorf("nodes %d outside 1-9", o.Nodes)
	}
	c := &Cluster{opts: o, log: o.Logger}
	if err := Down(ctx, o.Paths); err != nil {
		return nil, fmt.Errorf("remove an earlier cluster: %w", err)
	}
	defer func() {
		if err != nil {
			c.Stop(context.WithoutCancel(ctx))
		}
	}()
	if err := saveState(o.Paths); err != nil {
		return nil, err
	}
	for i := 1; i <= o.Nodes; i++ {
		c.nodes = append(c.nodes, newNode(o.Paths, i))
	}
	step := c.step("network: bridge " + Bridge + ", guard table, a namespace per node")
	if err := setUpBridge(ctx); err != nil {
		return nil, err
	}
	for _, n := range c.nodes {
		if err := setUpNodeNetwork(ctx, n, c.nodes); err != nil {
			return nil, err
		}
	}
	if err := routeServices(ctx, c.nodes[0]); err != nil {
		return nil, err
	}
	c.choosePolicyEnforcer(ctx, c.nodes[0])
	step()
	if err := c.startControlPlane(ctx); err != nil {
		return nil, err
	}
	step = c.step("nodes: containerd, kubelet and kube-proxy in each node's namespaces")
	for _, n := range c.nodes {
		if err := c.startNode(n); err != nil {
			return nil, err
		}
	}
	if err := c.waitNodesReady(ctx); err != nil {
		return nil, err
	}
	step()
	step = c.step("add-ons: CoreDNS, local-path-provisioner, the NetworkPolicy enforcer")
	if err := c.startAddons(ctx); err != nil {
		return nil, err
	}
	step()
	return c, nil
}

// step logs the start of a named step and returns a function that logs
// its end with how long it took.
func (c *Cluster) step(name string) func() {
	start := time.Now()
	c.log.Info("starting", "step", name)
	return func() { c.log.Info("done", "step", name, "took", time.Since(start).Round(time.Millisecond)) }
}

// startControlPlane starts etcd, kube-apiserver, kube-controller-manager
// and kube-scheduler on the host, the API server on the bridge address.
func (c *Cluster) startControlPlane(ctx context.Context) error {
	done := c.step("control plane: etcd, kube-apiserver, kube-controller-manager, kube-scheduler")
	b := c.opts.Binaries
	cp, err := controlplane.Start(ctx, controlplane.Options{
		Binaries:  controlplane.Binaries{Etcd: b.path("etcd"), KubeAPIServer: b.path("kube-apiserver"), Kubectl: b.path("kubectl")},
		ParentDir: c.opts.Paths.Data, CRDDir: c.opts.CRDDir, CRDSource: c.opts.CRDSource, Logger: c.log,
		Nodes: &controlplane.NodesOptions{Address: HostAddr.String(), ServiceCIDR: ServiceNet},
	})
	if err != nil {
		return err
	}
	c.cp = cp
	c.Kubeconfig = filepath.Join(c.opts.Paths.Data, "admin.kubeconfig")
	if err := cp.WriteAdminKubeconfig(c.Kubeconfig); err != nil {
		return err
	}
	if c.Client, err = kubernetes.NewForConfig(cp.AdminConfig()); err != nil {
		return fmt.Errorf("build the admin client: %w", err)
	}
	dir := cp.Dir()
	kcm := filepath.Join(dir, "kube-controller-manager.kubeconfig")
	sched := filepath.Join(dir, "kube-scheduler.kubeconfig")
	if err := cp.WriteKubeconfig(kcm, "system:kube-controller-manager"); err != nil {
		return err
	}
	if err := cp.WriteKubeconfig(sched, "system:kube-scheduler"); err != nil {
		return err
	}
	if err := c.start("kube-controller-manager", dir, b.path("kube-controller-manager"),
		"--kubeconfig="+kcm, "--authentication-kubeconfig="+kcm, "--authorization-kubeconfig="+kcm,
		"--service-account-private-key-file="+cp.ServiceAccountKeyPath(), "--root-ca-file="+cp.CAPath(),
		"--use-service-account-credentials=true", "--cluster-name=sandgate", "--leader-elect=false",
		"--bind-address=127.0.0.1", "--secure-port=0", "--v=1"); err != nil {
		return err
	}
	if err := c.start("kube-scheduler", dir, b.path("kube-scheduler"),
		"--kubeconfig="+sched, "--authentication-kubeconfig="+sched, "--authorization-kubeconfig="+sched,
		"--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port=0", "--v=1"); err != nil {
		return err
	}
	done()
	return nil
}

// start starts a host process that Stop ends.
func (c *Cluster) start(name, logDir, bin string, args ...string) error {
	p, err := controlplane.StartProcess(name, logDir, bin, nil, args...)
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	return nil
}

// startNode writes node n's configuration and starts its runner in the
// node's network namespace and a new mount namespace.
func (c *Cluster) startNode(n node) error {
	b := c.opts.Binaries
	for _, d := range []string{n.path("config"), n.path("logs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	if err := writeNodeConfigs(n, c.opts.Images.Pause, b.Runc, b.CNIDir); err != nil {
		return err
	}
	ca, err := os.ReadFile(c.cp.CAPath())
	if err != nil {
		return fmt.Errorf("read the cluster CA: %w", err)
	}
	if err := os.WriteFile(n.path("config", "ca.crt"), ca, 0o644); err != nil {
		return fmt.Errorf("write %s's CA: %w", n.name, err)
	}
	if err := c.cp.WriteKubeconfig(n.path("config", "kubelet.kubeconfig"), "system:node:"+n.name, "system:nodes"); err != nil {
		return err
	}
	if err := c.cp.WriteKubeconfig(n.path("config", "kube-proxy.kubeconfig"), "system:kube-proxy"); err != nil {
		return err
	}
	spec := NodeSpec{
		Name: n.name, IP: n.ip.String(), Dir: n.dir,
		Containerd: b.path("containerd"), Ctr: b.path("ctr"), Kubelet: b.path("kubelet"), KubeProxy: b.path("kube-proxy"),
		BinPath: b.Dir + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		Images:  c.opts.Images.Tarballs,
	}
	data, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s's spec: %w", n.name, err)
	}
	if err := os.WriteFile(n.path("node.json"), data, 0o644); err != nil {
		return fmt.Errorf("write %s's spec: %w", n.name, err)
	}
	if err := prepareCgroups(n.name); err != nil {
		return err
	}
	return c.start("node-"+strconv.Itoa(n.index), n.path("logs"), "nsenter",
		"--net="+n.netnsPath(), "--", "unshare", "--mount", "--propagation", "private", "--",
		b.Self, "node", "--dir", n.dir)
}

// Stop ends every process of the cluster and removes what it made.
func (c *Cluster) Stop(ctx context.Context) error {
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		errs = append(errs, c.procs[i].Stop(15*time.Second))
	}
	if c.cp != nil {
		errs = append(errs, c.cp.Stop())
	}
	errs = append(errs, Down(ctx, c.opts.Paths))
	if left := Leftovers(ctx, c.opts.Paths); len(left) > 0 {
		errs = append(errs, fmt.Errorf("left on the machine: %v", left))
	}
	return errors.Join(errs...)
}

// NodeIPs are the nodes' InternalIPs, in node order.
func (c *Cluster) NodeIPs() []string {
	ips := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		ips[i] = n.ip.String()
	}
	return ips
}

// NodeNames are the nodes' names, in node order.
func (c *Cluster) NodeNames() []string {
	names := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		names[i] = n.name
	}
	return names
}

// Dir is the cluster's data directory, with every component's log.
func (c *Cluster) Dir() string { return c.opts.Paths.Data }
