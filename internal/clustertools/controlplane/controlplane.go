package controlplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sandgate/sandgate/internal/clustertools/certs"
	"github.com/sandgate/sandgate/internal/httpprobe"
)

// Options configure a control plane.
type Options struct {
	Binaries Binaries
	// ParentDir holds the control plane's temporary directory; "" means the
	// system temp dir.
	ParentDir string
	// CRDDir holds CRD manifests to install; "" installs none. A CRD whose
	// conversion strategy is Webhook is installed with strategy None: no
	// control plane started here runs a conversion webhook.
	CRDDir string
	// CRDSource says what CRDDir holds ("upstream", "generated"; see
	// CRDSourceOf) for the log line that reports the installed CRDs.
	CRDSource string
	// StartTimeout bounds how long etcd and kube-apiserver may take to be ready.
	StartTimeout time.Duration
	Logger       *slog.Logger
	// Nodes configures the API server for a cluster with real nodes
	// (kubelets, a controller manager, a scheduler); nil serves tests
	// that have none.
	Nodes *NodesOptions
}

// NodesOptions are the API server settings a cluster with real nodes needs.
type NodesOptions struct {
	// Address is the IP the API server binds and advertises: one the
	// nodes can reach.
	Address string
	// ServiceCIDR is the Services' range; its first address is the
	// kubernetes Service's, which the serving certificate also names.
	ServiceCIDR netip.Prefix
}

// ServiceAccountIssuer is the issuer of the tokens the API server signs.
const ServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"

// ControlPlane is a running etcd + kube-apiserver pair.
type ControlPlane struct {
	opts      Options
	dir       string
	pki       *pki
	etcd      *Process
	apiserver *Process
	apiArgs   []string
	apiPort   int
	url       string
	log       *slog.Logger
}

// Start brings up etcd and kube-apiserver and installs the CRDs. The caller
// must call Stop, which also removes the temporary directory.
func Start(ctx context.Context, opts Options) (_ *ControlPlane, err error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 90 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	dir, err := os.MkdirTemp(opts.ParentDir, "sandgate-controlplane-")
	if err != nil {
		return nil, fmt.Errorf("create control-plane dir: %w", err)
	}
	cp := &ControlPlane{opts: opts, dir: dir, log: opts.Logger.With("component", "controlplane")}
	defer func() {
		if err != nil {
			cp.Stop()
		}
	}()
	if cp.pki, err = newPKI(dir, opts.servingIPs()); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := cp.startEtcd(ctx); err != nil {
		return nil, err
	}
	if err := cp.StartAPIServer(ctx); err != nil {
		return nil, err
	}
	if opts.CRDDir != "" {
		if err := cp.installCRDs(ctx, opts.CRDDir, opts.CRDSource); err != nil {
			return nil, err
		}
	}
	return cp, nil
}

// Dir is the control plane's temporary directory; every child process
// carries it on its command line.
func (c *ControlPlane) Dir() string { return c.dir }

// URL is the API server's https address.
func (c *ControlPlane) URL() string { return c.url }

func (c *ControlPlane) startEtcd(ctx context.Context) error {
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	client := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peer := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	c.etcd, err = StartProcess("etcd", c.dir, c.opts.Binaries.Etcd, nil,
		"--name=default",
		"--data-dir="+filepath.Join(c.dir, "etcd"),
		"--listen-client-urls="+client,
		"--advertise-client-urls="+client,
		"--listen-peer-urls="+peer,
		"--initial-advertise-peer-urls="+peer,
		"--initial-cluster=default="+peer,
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	)
	if err != nil {
		return err
	}
	c.apiArgs = []string{"--etcd-servers=" + client}
	return c.waitHTTP(ctx, c.etcd, client+"/health", nil)
}

// servingIPs are the addresses beyond loopback the serving certificate
// names.
func (o Options) servingIPs() []net.IP {
	if o.Nodes == nil {
		return nil
	}
	first := o.Nodes.ServiceCIDR.Masked().Addr().Next()
	return []net.IP{net.ParseIP(o.Nodes.Address), net.IP(first.AsSlice())}
}

// apiServerArgs are the flags that differ between a cluster with nodes and
// one without.
func (o Options) apiServerArgs() []string {
	if o.Nodes == nil {
		return []string{
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			"--authorization-mode=RBAC",
			"--service-cluster-ip-range=10.96.0.0/24",
			// No controller-manager runs, so nothing creates each namespace's
			// default ServiceAccount that this plugin would demand of pods.
			"--disable-admission-plugins=ServiceAccount",
			"--endpoint-reconciler-type=none",
		}
	}
	return []string{
		"--bind-address=" + o.Nodes.Address,
		"--advertise-address=" + o.Nodes.Address,
		"--authorization-mode=Node,RBAC",
		"--enable-admission-plugins=NodeRestriction",
		"--service-cluster-ip-range=" + o.Nodes.ServiceCIDR.String(),
		"--endpoint-reconciler-type=lease",
		// Node names do not resolve; their InternalIPs do.
		"--kubelet-preferred-address-types=InternalIP",
	}
}

// writeKubeletClient issues the certificate the API server presents to
// kubelets (logs, exec, port-forward) and returns its flags.
func (c *ControlPlane) writeKubeletClient() ([]string, error) {
	cert, key, err := c.pki.ca.Issue(certs.Client("kube-apiserver-kubelet-client", "system:masters"))
	if err != nil {
		return nil, err
	}
	certPath, keyPath := filepath.Join(c.dir, "kubelet-client.crt"), filepath.Join(c.dir, "kubelet-client.key")
	for path, data := range map[string][]byte{certPath: cert, keyPath: key} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", filepath.Base(path), err)
		}
	}
	return []string{"--kubelet-client-certificate=" + certPath, "--kubelet-client-key=" + keyPath}, nil
}

// StartAPIServer starts kube-apiserver, or restarts it after StopAPIServer
// on the same port, and waits until it is ready.
func (c *ControlPlane) StartAPIServer(ctx context.Context) error {
	if c.apiPort == 0 {
		ports, err := freePorts(1)
		if err != nil {
			return err
		}
		c.apiPort = ports[0]
		host := "127.0.0.1"
		if c.opts.Nodes != nil {
			host = c.opts.Nodes.Address
		}
		c.url = "https://" + net.JoinHostPort(host, strconv.Itoa(c.apiPort))
	}
	args := append([]string{}, c.apiArgs...)
	args = append(args, c.opts.apiServerArgs()...)
	if c.opts.Nodes != nil {
		kubelet, err := c.writeKubeletClient()
		if err != nil {
			return err
		}
		args = append(args, kubelet...)
	}
	args = append(args,
		"--secure-port="+strconv.Itoa(c.apiPort),
		"--cert-dir="+filepath.Join(c.dir, "certs"),
		"--tls-cert-file="+c.pki.servingCertPath,
		"--tls-private-key-file="+c.pki.servingKeyPath,
		"--client-ca-file="+c.pki.caPath,
		"--service-account-issuer="+ServiceAccountIssuer,
		"--service-account-key-file="+c.pki.saPubPath,
		"--service-account-signing-key-file="+c.pki.saKeyPath,
		"--allow-privileged=true",
		"--profiling=false",
		"--v=1",
	)
	var err error
	if c.apiserver, err = StartProcess("kube-apiserver", c.dir, c.opts.Binaries.KubeAPIServer, nil, args...); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.AdminConfig())
	if err != nil {
		return fmt.Errorf("build admin client: %w", err)
	}
	return c.waitHTTP(ctx, c.apiserver, "", func(ctx context.Context) error {
		return cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).Error()
	})
}

// StopAPIServer stops kube-apiserver and leaves etcd running, to test how
// clients ride out an API server outage.
func (c *ControlPlane) StopAPIServer() error {
	if c.apiserver == nil {
		return nil
	}
	return c.apiserver.Stop(10 * time.Second)
}

// waitHTTP polls url (or probe) until it answers, failing early with the
// process log when the process exits.
func (c *ControlPlane) waitHTTP(ctx context.Context, p *Process, url string, probe func(context.Context) error) error {
	if probe == nil {
		probe = func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			return httpprobe.OK(http.DefaultClient, req)
		}
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		lastErr := probe(ctx)
		if lastErr == nil {
			c.log.Info("ready", "process", p.name)
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited during start: %s", p.name, p.LogTail())
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w (last error: %v) log: %s", p.name, ctx.Err(), lastErr, p.LogTail())
		case <-tick.C:
		}
	}
}

// Stop ends kube-apiserver and etcd and removes the temporary directory.
func (c *ControlPlane) Stop() error {
	var errs []error
	for _, p := range []*Process{c.apiserver, c.etcd} {
		if p != nil {
			errs = append(errs, p.Stop(10*time.Second))
		}
	}
	errs = append(errs, os.RemoveAll(c.dir))
	return errors.Join(errs...)
}

// AdminConfig returns a cluster-admin client config (a client certificate in
// group system:masters).
func (c *ControlPlane) AdminConfig() *rest.Config {
	return &rest.Config{
		Host:            c.url,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.pki.ca.PEM, CertData: c.pki.adminCert, KeyData: c.pki.adminKey},
		QPS:             200,
		Burst:           400,
	}
}

// AnonymousConfig returns a config with the server's CA and no credentials.
func (c *ControlPlane) AnonymousConfig() *rest.Config {
	return &rest.Config{Host: c.url, TLSClientConfig: rest.TLSClientConfig{CAData: c.pki.ca.PEM}}
}
