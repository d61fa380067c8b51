package nodeproxyd

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/buildinfo"
	"github.com/sandgate/sandgate/internal/drain"
	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/requestpath/nodeproxy"
	"github.com/sandgate/sandgate/internal/sandboxapi"
)

// Deps are what a caller injects besides the Config: the logger, and what a
// test or benchmark replaces. Every nil field is built as cmd/nodeproxy
// ships it.
type Deps struct {
	// Logger receives the daemon's log lines. Required.
	Logger *slog.Logger
	// Registry receives every metric and is what /metrics serves; nil is a
	// fresh one with the Go, process and build-info collectors.
	Registry Registry
	// Sources feed the informer caches; nil builds API clients from
	// Config.Kubeconfig.
	Sources Sources
	// Listener is the plain listener, already bound, instead of one bound
	// on LISTEN_ADDR: for a test that must know the port before Assemble.
	Listener net.Listener
}

// Registry is where metrics are registered and gathered from.
type Registry interface {
	prometheus.Registerer
	prometheus.Gatherer
}

// Sources fill in the informers' list-watchers.
type Sources interface {
	Informer(informer.Options) informer.Options
}

// Clients are API clients as Sources: the informers list and watch
// through them.
type Clients struct {
	Kube      kubernetes.Interface
	Sandboxes *sandboxapi.Client
}

// Informer returns o listing and watching through c.
func (c Clients) Informer(o informer.Options) informer.Options {
	o.Claims, o.Sandboxes = c.Sandboxes.SandboxClaims(o.Namespace), c.Sandboxes.Sandboxes(o.Namespace)
	o.Pods, o.Nodes = c.Kube.CoreV1().Pods(o.Namespace), c.Kube.CoreV1().Nodes()
	return o
}

// Daemon is an assembled node proxy: every part built and every listener
// bound, nothing running until Run.
type Daemon struct {
	cfg      Config
	log      *slog.Logger
	reg      Registry
	fetcher  *jwt.JWKSFetcher
	verifier *jwt.Verifier
	idx      *informer.Index
	reporter *activity.Reporter
	tracker  *activity.Tracker
	proxy    *nodeproxy.Proxy
	lns      []nodeproxy.Listener
	opsLn    net.Listener
	ops      *http.Server
	egress   *egressRunner
	closers  []func() // newest last; Close runs them newest first
}

// SessionLeeway is the clock leeway on the expiry of session tokens and
// origin sessions.
const SessionLeeway = 5 * time.Second

// entryLeeway is the auth API's for entry codes: an entry code it would
// refuse as expired is refused here, without a call.
const entryLeeway = 2 * time.Second

// Assemble turns c, which Validate has accepted, into the node proxy's
// running parts: API clients, the JWKS fetcher and verifiers, the
// handshaker, the informer index, the activity reporter, the proxy, the
// egress proxy, and every listener bound. Call Run to serve, or Close to
// release a Daemon never run.
func Assemble(c Config, deps Deps) (*Daemon, error) {
	if deps.Logger == nil {
		return nil, errors.New("assemble node proxy: no logger")
	}
	d := &Daemon{cfg: c, log: deps.Logger, reg: deps.Registry}
	if err := d.assemble(deps); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func (d *Daemon) assemble(deps Deps) error {
	c, log := d.cfg, d.log
	sources := deps.Sources
	if sources == nil {
		kube, sb, err := sandboxapi.NewClients(c.Kubeconfig, "sandgate-nodeproxy")
		if err != nil {
			return err
		}
		sources = Clients{Kube: kube, Sandboxes: sb}
	}
	if d.reg == nil {
		d.reg = buildinfo.Registry("nodeproxy")
	}

	var err error
	// A key set can only be replaced by a fetch after the first, and the
	// first happens in Run or for a request, once d.proxy is set.
	if d.fetcher, err = jwt.NewJWKSFetcher(jwt.FetcherOptions{
		URL: c.jwksURL(), RefreshInterval: c.JWKSRefresh, Logger: log,
		OnReplaced: func() { d.proxy.KeysReplaced() },
	}); err != nil {
		return err
	}
	o := c.proxyOptions()
	if d.verifier, o.OriginVerifier, o.EntryVerifier, err = d.verifiers(); err != nil {
		return err
	}
	o.Verifier = d.verifier
	informerOpts := informer.Options{
		Namespace: c.Namespace, NodeName: c.NodeName, ClaimPrefix: c.ClaimPrefix,
		Container: c.AppContainer, Port: c.AppPort, Logger: log,
	}
	hs, err := handshake.New(c.handshakeOptions(log, d.reg))
	if err != nil {
		return err
	}
	d.closers = append(d.closers, func() { hs.Close() })
	o.Handshaker, informerOpts.OnPodGone, informerOpts.OnUserGone = hs, hs.ForgetPod, hs.ForgetUser
	if d.idx, err = informer.New(sources.Informer(informerOpts)); err != nil {
		return err
	}
	if c.SATokenFile != "" {
		o.ServiceAccountToken = nodeproxy.FileToken(c.SATokenFile, time.Minute)
	}
	d.tracker = activity.New(activity.Options{Quiet: min(activity.DefaultQuiet, c.ReportInterval)})
	if o.HopKey, err = c.hopKey(); err != nil {
		return err
	}
	if o.HopKey == nil {
		warnUnauthenticatedHops(log)
	}
	if o.AuthProxySecret, err = c.authProxySecret(); err != nil {
		return err
	}
	o.Directory, o.Peers, o.Waiter = d.idx, d.idx, d.idx
	o.ReadyChecks = []nodeproxy.ReadyCheck{{Name: "informers", Ready: d.idx.HasSynced}, {Name: "jwks", Ready: d.fetcher.Ready}}
	o.Activity = d.tracker
	o.JWKSRefreshed, o.JWKSPublished, o.KeySetsReplaced = d.fetcher.LastRefresh, d.fetcher.Published, d.fetcher.Replaced
	o.Logger, o.Registerer, o.Gatherer = log, d.reg, d.reg
	if err := d.listen(deps.Listener); err != nil {
		return err
	}
	if o.PeerPort == 0 {
		o.PeerPort = d.lns[0].Addr().(*net.TCPAddr).Port
	}
	if d.proxy, err = nodeproxy.New(o); err != nil {
		return err
	}
	if d.reporter, err = activity.NewReporter(activity.ReporterOptions{
		Tracker: d.tracker, Node: c.NodeName, Sender: d.proxy.ActivitySender(),
		Interval: c.ReportInterval, Logger: log, Registerer: d.reg,
	}); err != nil {
		return err
	}
	if d.egress, err = newEgress(c.Egress, clientTimeouts{header: c.HeaderTimeout, keepAlive: c.IdleTimeout, write: c.WriteTimeout}, d.idx, d.tracker, c.Namespace, log, d.reg); err != nil {
		return err
	}
	if d.egress != nil {
		d.closers = append(d.closers, func() { d.egress.ln.Close() })
	}
	d.ops = &http.Server{Handler: drain.New(c.DrainDelay, log).Wrap(d.proxy.OpsHandler()), ReadHeaderTimeout: 5 * time.Second}
	return nil
}

// verifiers check session tokens, origin sessions and entry codes against
// the fetched JWKS.
func (d *Daemon) verifiers() (session, origin, entry *jwt.Verifier, err error) {
	c := d.cfg
	build := func(audience string, leeway time.Duration) *jwt.Verifier {
		if err != nil {
			return nil
		}
		var v *jwt.Verifier
		v, err = jwt.NewVerifier(jwt.VerifierOptions{Keys: d.fetcher, Issuer: c.Issuer, Audience: audience, Leeway: leeway})
		return v
	}
	session = build(c.Audience, SessionLeeway)
	origin = build(jwt.OriginAudience(c.Audience), SessionLeeway)
	entry = build(jwt.EntryAudience(c.Audience), entryLeeway)
	return session, origin, entry, err
}

// listen binds the ops listener and the proxy's: plain (unless given),
// then HTTPS when configured, with its certificate loaded and watched for
// changes.
func (d *Daemon) listen(plain net.Listener) error {
	c := d.cfg
	var cert *nodeproxy.Certificate
	addrs := []string{c.OpsAddr, c.ListenAddr}
	if c.tlsEnabled() {
		var err error
		cert, err = nodeproxy.NewCertificate(nodeproxy.CertificateOptions{CertFile: c.TLSCertFile, KeyFile: c.TLSKeyFile, Logger: d.log})
		if err != nil {
			return fmt.Errorf("load TLS certificate: %w", err)
		}
		addrs = append(addrs, c.TLSListenAddr)
	}
	bound := make([]net.Listener, 0, len(addrs))
	for i, addr := range addrs {
		if i == 1 && plain != nil {
			bound = append(bound, plain)
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			for _, b := range bound {
				b.Close()
			}
			return fmt.Errorf("listen on %s: %w", addr, err)
		}
		bound = append(bound, ln)
	}
	d.closers = append(d.closers, func() {
		for _, b := range bound {
			b.Close()
		}
	})
	d.opsLn, d.lns = bound[0], []nodeproxy.Listener{{Listener: bound[1]}}
	if cert != nil {
		d.lns = append(d.lns, nodeproxy.Listener{Listener: bound[2], TLS: cert.TLSConfig()})
	}
	return nil
}

// Close releases what Assemble acquired: listeners and the handshaker. Run
// does so itself when it returns.
func (d *Daemon) Close() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
	d.closers = nil
}

// Addr is the bound address of the plain listener (LISTEN_ADDR).
func (d *Daemon) Addr() string { return d.lns[0].Addr().String() }

// TLSAddr is the bound address of the HTTPS listener, "" without one.
func (d *Daemon) TLSAddr() string {
	if len(d.lns) < 2 {
		return ""
	}
	return d.lns[1].Addr().String()
}

// OpsAddr is the bound address of the ops listener (/healthz, /readyz,
// /metrics).
func (d *Daemon) OpsAddr() string { return d.opsLn.Addr().String() }

// EgressAddr is the bound address of the egress listener, "" without one.
func (d *Daemon) EgressAddr() string {
	if d.egress == nil {
		return ""
	}
	return d.egress.ln.Addr().String()
}

// Index is the daemon's informer index, for tests that look up what the
// node proxy sees.
func (d *Daemon) Index() *informer.Index { return d.idx }

// Verifier is the daemon's session token verifier, on the fetched JWKS.
func (d *Daemon) Verifier() *jwt.Verifier { return d.verifier }
