package authapid

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/accountpath/authapi"
	"github.com/sandgate/sandgate/internal/accountpath/sweeper"
	"github.com/sandgate/sandgate/internal/buildinfo"
	"github.com/sandgate/sandgate/internal/drain"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/settings"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// Deps are what a caller injects besides the Config: the loggers, and what
// a test or benchmark replaces. Every nil field is built as cmd/authapi
// ships it.
type Deps struct {
	// Logger receives the daemon's log lines. Required.
	Logger *slog.Logger
	// Audit receives the audit events (docs/audit.md); nil sends them to
	// Logger.
	Audit *slog.Logger
	// Registry receives every metric and is what /metrics serves; nil is a
	// fresh one with the Go, process and build-info collectors.
	Registry Registry
	// Kube and Sandboxes are the API clients; nil builds both from
	// Config.Kubeconfig.
	Kube      kubernetes.Interface
	Sandboxes *sandboxapi.Client
	// SweepApart leaves the sweeper out of Run, for a test that runs
	// Sweeper() itself only while it wants agents suspended.
	SweepApart bool
	// Now is the server's clock (sessions, entry codes, signing keys, rate
	// limits; not the sweeper's idle timers); nil is time.Now.
	Now func() time.Time
}

// Registry is where metrics are registered and gathered from.
type Registry interface {
	prometheus.Registerer
	prometheus.Gatherer
}

// Daemon is an assembled auth API: every part built and every listener
// bound, nothing running until Run.
type Daemon struct {
	cfg        Config
	log        *slog.Logger
	reg        Registry
	srv        *authapi.Server
	sweeper    *sweeper.Sweeper
	sweepApart bool
	lns        map[string]net.Listener // by configured address
	servers    []served
}

// served is one listener and the server for it.
type served struct {
	ln  net.Listener
	srv *http.Server
}

// Assemble turns c, which Validate has accepted, into the auth API's
// running parts: API clients, every listener bound (before anything
// reports ready; the internal one's address is where other replicas
// forward activity reports), the leader-elected sweeper, the server and
// the HTTP servers of the public, internal and ops listeners. Call Run to
// serve, or Close to release a Daemon never run.
func Assemble(c Config, deps Deps) (*Daemon, error) {
	if deps.Logger == nil {
		return nil, errors.New("assemble auth API: no logger")
	}
	d := &Daemon{cfg: c, log: deps.Logger, reg: deps.Registry, sweepApart: deps.SweepApart, lns: map[string]net.Listener{}}
	if err := d.assemble(deps); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func (d *Daemon) assemble(deps Deps) error {
	c, log := d.cfg, d.log
	kube, sb := deps.Kube, deps.Sandboxes
	if kube == nil || sb == nil {
		var err error
		if kube, sb, err = sandboxapi.NewClients(c.Kubeconfig, "sandgate-authapi"); err != nil {
			return err
		}
	}
	invite, err := c.inviteCode()
	if err != nil {
		return err
	}
	proxies, _ := c.trustedProxies() // validated
	if d.reg == nil {
		d.reg = buildinfo.Registry("authapi")
	}
	for _, addr := range []string{c.ListenAddr, c.InternalAddr, c.OpsAddr} {
		if addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", addr, err)
		}
		d.lns[addr] = ln
	}
	internalAddr := c.ListenAddr
	if c.InternalAddr != "" {
		internalAddr = c.InternalAddr
	}
	if d.sweeper, err = sweeper.New(sweeper.Options{
		Namespace: c.Namespace, Sandboxes: sb.Sandboxes(c.Namespace), Claims: sb.SandboxClaims(c.Namespace),
		Leases: kube.CoordinationV1(), Identity: sweeper.Identity(podName(c.PodName), reportAddr(c.PodIP, d.lns[internalAddr].Addr())),
		IdleTimeout: c.IdleTimeout, ReportInterval: c.ReportInterval, CountOpenConnections: c.IdleCountsOpenConnections,
		BusyAllowance: c.BusyAllowance,
		LeaseDuration: c.LeaseDuration, RenewDeadline: c.RenewDeadline, RetryPeriod: c.RetryPeriod,
		Pods: kube.CoreV1().Pods(c.Namespace), Events: kube.CoreV1().Events(c.Namespace),
		Logger: log, Audit: deps.Audit, Registerer: d.reg,
	}); err != nil {
		return err
	}
	if d.srv, err = authapi.New(authapi.Options{
		Logger: log, Audit: deps.Audit, Replica: podName(c.PodName), Metrics: authapi.NewMetrics(d.reg), Kube: kube, Sandboxes: sb,
		Namespace: c.Namespace, ClaimPrefix: c.ClaimPrefix, WarmPool: c.WarmPool, SigningSecret: c.SigningSecret,
		Issuer: c.Issuer, Audience: c.Audience, SessionTTL: c.SessionTTL,
		CookieName: c.CookieName, CookieSecure: c.CookieSecure, CookieMaxAge: c.CookieMaxAge,
		KeyRotationInterval: c.KeyRotationInterval, KeyPublishDelay: c.KeyPublishDelay, WakeTimeout: c.WakeTimeout, KeepAwake: c.KeepAwake,
		RateLimit: c.RateLimit, RateWindow: c.RateWindow, TrustedProxies: proxies, InviteCode: invite,
		MaxBodyBytes: int64(c.MaxBodyMB) << 20, AuthProxyHeader: c.AuthProxyHeader,
		InternalAudience: c.InternalAudience, AllowedServiceAccounts: settings.SplitList(c.AllowedServiceAccounts),
		TokenReviewCacheTTL: c.TokenReviewCacheTTL, Activity: d.sweeper,
		SignupBudget: c.SignupBudget, InternalReviewLimit: c.InternalReviewLimit, InternalReviewBudget: c.InternalReviewBudget,
		RoutingMode: userorigin.Mode(c.RoutingMode), UserDomain: c.UserDomain, OriginCookieName: c.OriginCookieName,
		EntryCodeTTL: c.EntryCodeTTL, Now: deps.Now,
		Admins: settings.SplitList(c.Admins), AdminGroups: settings.SplitList(c.AdminGroups), AdminGroupsHeader: c.AdminGroupsHeader,
	}); err != nil {
		return err
	}
	d.servers = d.httpServers()
	return nil
}

// httpServers pairs each listener with its handler: the public one (also
// /internal/ without INTERNAL_ADDR), the internal one, and ops behind the
// drain gate.
func (d *Daemon) httpServers() []served {
	c := d.cfg
	public := d.srv.Handler()
	handlers := map[string]http.Handler{c.OpsAddr: drain.New(c.DrainDelay, d.log).Wrap(authapi.OpsHandler(d.srv.Ready, d.reg))}
	if c.InternalAddr != "" {
		public = d.srv.Public()
		handlers[c.InternalAddr] = d.srv.Internal()
	}
	handlers[c.ListenAddr] = public
	out := make([]served, 0, len(handlers))
	for addr, h := range handlers {
		out = append(out, served{ln: d.lns[addr], srv: &http.Server{
			Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
			WriteTimeout: c.WakeTimeout + time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
			ErrorLog: slog.NewLogLogger(d.log.Handler(), slog.LevelWarn),
		}})
	}
	return out
}

// Close releases the listeners of a Daemon never run; Run does so itself.
func (d *Daemon) Close() {
	for _, ln := range d.lns {
		ln.Close()
	}
}

// Addr is the bound address of the public listener (LISTEN_ADDR).
func (d *Daemon) Addr() string { return d.lns[d.cfg.ListenAddr].Addr().String() }

// OpsAddr is the bound address of the ops listener (/healthz, /readyz,
// /metrics).
func (d *Daemon) OpsAddr() string { return d.lns[d.cfg.OpsAddr].Addr().String() }

// Ready reports whether the server reports ready (its /readyz).
func (d *Daemon) Ready() bool { return d.srv.Ready() }

// Sweeper is the daemon's idle sweeper; Run starts it unless
// Deps.SweepApart.
func (d *Daemon) Sweeper() *sweeper.Sweeper { return d.sweeper }

// podName is POD_NAME, or the host name outside Kubernetes.
func podName(name string) string {
	if name != "" {
		return name
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "authapi"
	}
	return strings.ToLower(h)
}

// reportAddr is host:port where other replicas reach this one's internal
// listener: POD_IP (or the listener's own host, or loopback) and the bound
// port.
func reportAddr(podIP string, bound net.Addr) string {
	host, port, _ := net.SplitHostPort(bound.String())
	switch {
	case podIP != "":
		host = podIP
	case host == "" || net.ParseIP(host).IsUnspecified():
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}
