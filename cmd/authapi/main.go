// Command authapi runs sandgate's auth API (accounts, JWT sessions, landing
// page) and, as `authapi jwt inspect`, checks a session token for operators.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/sandgate/sandgate/internal/authapi"
	"github.com/sandgate/sandgate/internal/buildinfo"
	"github.com/sandgate/sandgate/internal/drain"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/settings"
	"github.com/sandgate/sandgate/internal/sweeper"
	"github.com/sandgate/sandgate/internal/userorigin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process: 0 on success, 1 on failure, 2 on a
// usage error.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) >= 2 && args[0] == "jwt" && args[1] == "inspect" {
		return inspect(ctx, args[2:], getenv, stdin, stdout, stderr)
	}
	preStop := len(args) > 0 && args[0] == "drain"
	if preStop {
		args = args[1:]
	}
	c, err := load(args, getenv, stdout)
	stderr = &lineWriter{w: stderr}
	return settings.Serve("authapi", stderr, err, c.validate, c.LogLevel, func(log *slog.Logger) error {
		if preStop {
			return drain.Request(ctx, c.OpsAddr, c.DrainDelay)
		}
		return serve(ctx, c, log, auditLogger(stderr))
	})
}

// auditLogger writes the audit events (docs/audit.md) to the log stream,
// at Info whatever LOG_LEVEL says: a log pipeline routes them apart by
// their log=audit attribute.
func auditLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// lineWriter lets the main and the audit logger share one stream: each
// writes a whole line per Write, and lines never interleave.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// serve wires the auth API and runs it until ctx ends, then shuts down
// gracefully: readiness drops, listeners stop accepting, requests in flight
// get SHUTDOWN_TIMEOUT to finish.
func serve(ctx context.Context, c config, log, audit *slog.Logger) error {
	kube, sb, err := sandboxapi.NewClients(c.Kubeconfig, "sandgate-authapi")
	if err != nil {
		return err
	}
	invite, err := c.inviteCode()
	if err != nil {
		return err
	}
	proxies, _ := c.trustedProxies() // validated
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := buildinfo.Register(reg, "authapi"); err != nil {
		return err
	}

	// Bind every listener before anything reports ready; the internal one's
	// address is where other replicas forward activity reports.
	internalAddr := c.ListenAddr
	if c.InternalAddr != "" {
		internalAddr = c.InternalAddr
	}
	lns := map[string]net.Listener{}
	closeAll := func() {
		for _, ln := range lns {
			ln.Close()
		}
	}
	for _, addr := range []string{c.ListenAddr, c.InternalAddr, c.OpsAddr} {
		if addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			closeAll()
			return fmt.Errorf("listen on %s: %w", addr, err)
		}
		lns[addr] = ln
	}
	sw, err := sweeper.New(sweeper.Options{
		Namespace: c.Namespace, Sandboxes: sb.Sandboxes(c.Namespace), Claims: sb.SandboxClaims(c.Namespace),
		Leases: kube.CoordinationV1(), Identity: sweeper.Identity(podName(c.PodName), reportAddr(c.PodIP, lns[internalAddr].Addr())),
		IdleTimeout: c.IdleTimeout, ReportInterval: c.ReportInterval, CountOpenConnections: c.IdleCountsOpenConnections,
		LeaseDuration: c.LeaseDuration, RenewDeadline: c.RenewDeadline, RetryPeriod: c.RetryPeriod,
		Pods: kube.CoreV1().Pods(c.Namespace), Events: kube.CoreV1().Events(c.Namespace),
		Logger: log, Audit: audit, Registerer: reg,
	})
	if err != nil {
		closeAll()
		return err
	}
	srv, err := authapi.New(authapi.Options{
		Logger: log, Audit: audit, Replica: podName(c.PodName), Metrics: authapi.NewMetrics(reg), Kube: kube, Sandboxes: sb,
		Namespace: c.Namespace, ClaimPrefix: c.ClaimPrefix, WarmPool: c.WarmPool, SigningSecret: c.SigningSecret,
		Issuer: c.Issuer, Audience: c.Audience, SessionTTL: c.SessionTTL,
		CookieName: c.CookieName, CookieSecure: c.CookieSecure, CookieMaxAge: c.CookieMaxAge,
		KeyRotationInterval: c.KeyRotationInterval, KeyPublishDelay: c.KeyPublishDelay, WakeTimeout: c.WakeTimeout,
		RateLimit: c.RateLimit, RateWindow: c.RateWindow, TrustedProxies: proxies, InviteCode: invite,
		MaxBodyBytes: int64(c.MaxBodyMB) << 20, AuthProxyHeader: c.AuthProxyHeader,
		InternalAudience: c.InternalAudience, AllowedServiceAccounts: settings.SplitList(c.AllowedServiceAccounts),
		TokenReviewCacheTTL: c.TokenReviewCacheTTL, Activity: sw,
		SignupBudget: c.SignupBudget, InternalReviewLimit: c.InternalReviewLimit, InternalReviewBudget: c.InternalReviewBudget,
		RoutingMode: userorigin.Mode(c.RoutingMode), UserDomain: c.UserDomain, OriginCookieName: c.OriginCookieName,
		EntryCodeTTL: c.EntryCodeTTL,
	})
	if err != nil {
		closeAll()
		return err
	}

	public := srv.Handler()
	handlers := map[string]http.Handler{c.OpsAddr: drain.New(c.DrainDelay, log).Wrap(authapi.OpsHandler(srv.Ready, reg))}
	if c.InternalAddr != "" {
		public = srv.Public()
		handlers[c.InternalAddr] = srv.Internal()
	}
	handlers[c.ListenAddr] = public
	var servers []*http.Server
	g, gctx := errgroup.WithContext(ctx)
	for addr, h := range handlers {
		ln := lns[addr]
		s := &http.Server{
			Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
			WriteTimeout: c.WakeTimeout + time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		}
		servers = append(servers, s)
		log.Info("listening", "addr", ln.Addr().String())
		g.Go(func() error {
			if err := s.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("serve %s: %w", addr, err)
			}
			return nil
		})
	}
	g.Go(func() error { return sw.Run(gctx) })
	g.Go(func() error { return srv.Run(gctx) })
	g.Go(func() error {
		<-gctx.Done()
		log.Info("shutting down", "timeout_ms", c.ShutdownTimeout.Milliseconds())
		sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownTimeout)
		defer cancel()
		var errs []error
		for _, s := range servers {
			errs = append(errs, s.Shutdown(sctx))
		}
		return errors.Join(errs...)
	})
	err = g.Wait()
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

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
