// Command nodeproxy runs sandgate's node proxy, one per node: it serves
// /u/<user>/** from the user's sandbox pod and passes every other path to
// the auth API. See internal/nodeproxy.
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
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/errgroup"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/buildinfo"
	"github.com/sandgate/sandgate/internal/drain"
	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/nodeproxy"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/settings"
	"github.com/sandgate/sandgate/internal/userorigin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is main without the process: 0 on success, 1 on failure, 2 on a
// usage error.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	preStop := len(args) > 0 && args[0] == "drain"
	if preStop {
		args = args[1:]
	}
	c, err := load(args, getenv, stdout)
	return settings.Serve("nodeproxy", stderr, err, c.validate, c.LogLevel, func(log *slog.Logger) error {
		if preStop {
			return drain.Request(ctx, c.OpsAddr, c.DrainDelay)
		}
		return serve(ctx, c, log)
	})
}

// serve wires the node proxy and runs it until ctx ends: listeners are
// bound first, the proxy starts serving once the informers have synced and
// the JWKS has loaded (or SYNC_TIMEOUT passed), and shutdown drains.
func serve(ctx context.Context, c config, log *slog.Logger) error {
	kube, sb, err := sandboxapi.NewClients(c.Kubeconfig, "sandgate-nodeproxy")
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := buildinfo.Register(reg, "nodeproxy"); err != nil {
		return err
	}

	fetcher, err := jwt.NewJWKSFetcher(jwt.FetcherOptions{URL: c.jwksURL(), RefreshInterval: c.JWKSRefresh, Logger: log})
	if err != nil {
		return err
	}
	verifier, err := jwt.NewVerifier(jwt.VerifierOptions{Keys: fetcher, Issuer: c.Issuer, Audience: c.Audience, Leeway: 5 * time.Second})
	if err != nil {
		return err
	}
	originVerifier, err := jwt.NewVerifier(jwt.VerifierOptions{Keys: fetcher, Issuer: c.Issuer, Audience: jwt.OriginAudience(c.Audience), Leeway: 5 * time.Second})
	if err != nil {
		return err
	}
	entryVerifier, err := jwt.NewVerifier(jwt.VerifierOptions{Keys: fetcher, Issuer: c.Issuer, Audience: jwt.EntryAudience(c.Audience), Leeway: entryLeeway})
	if err != nil {
		return err
	}
	hs, err := handshake.New(c.handshakeOptions(log, reg))
	if err != nil {
		return err
	}
	defer hs.Close()
	idx, err := informer.New(informer.Options{
		Namespace: c.Namespace, NodeName: c.NodeName, ClaimPrefix: c.ClaimPrefix,
		Container: c.AppContainer, Port: c.AppPort,
		Claims: sb.SandboxClaims(c.Namespace), Sandboxes: sb.Sandboxes(c.Namespace),
		Pods: kube.CoreV1().Pods(c.Namespace), Nodes: kube.CoreV1().Nodes(),
		OnPodGone: hs.ForgetPod, OnUserGone: hs.ForgetUser, Logger: log,
	})
	if err != nil {
		return err
	}
	var saToken func() (string, error)
	if c.SATokenFile != "" {
		saToken = nodeproxy.FileToken(c.SATokenFile, time.Minute)
	}
	tracker := activity.New(activity.Options{Quiet: min(activity.DefaultQuiet, c.ReportInterval)})
	reporter, err := activity.NewReporter(activity.ReporterOptions{
		Tracker: tracker, Node: c.NodeName, URL: c.authAPIInternalURL() + "/internal/v1/activity",
		TokenFile: c.SATokenFile, Interval: c.ReportInterval, Logger: log, Registerer: reg,
	})
	if err != nil {
		return err
	}
	o := c.proxyOptions()
	if o.HopKey, err = c.hopKey(); err != nil {
		return err
	}
	if o.HopKey == nil {
		warnUnauthenticatedHops(log)
	}
	o.Directory, o.Verifier, o.OriginVerifier, o.EntryVerifier = idx, verifier, originVerifier, entryVerifier
	o.Handshaker, o.Peers, o.Waiter = hs, idx, idx
	o.ReadyChecks = []nodeproxy.ReadyCheck{{Name: "informers", Ready: idx.HasSynced}, {Name: "jwks", Ready: fetcher.Ready}}
	o.ServiceAccountToken, o.Activity = saToken, tracker
	o.JWKSRefreshed = fetcher.LastRefresh
	o.Logger, o.Registerer, o.Gatherer = log, reg, reg
	proxy, err := nodeproxy.New(o)
	if err != nil {
		return err
	}

	lns, opsLn, err := listen(c, log)
	if err != nil {
		return err
	}
	eg, err := newEgress(c.Egress, idx, log, reg)
	if err != nil {
		return err
	}
	ops := &http.Server{Handler: drain.New(c.DrainDelay, log).Wrap(proxy.OpsHandler()), ReadHeaderTimeout: 5 * time.Second}

	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return idx.Run(ctx) })
	if eg != nil {
		g.Go(func() error { return eg.serve(ctx, log) })
	}
	g.Go(func() error { return fetcher.Start(ctx) })
	g.Go(func() error { return reporter.Run(ctx) })
	g.Go(func() error {
		if err := ops.Serve(opsLn); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serve ops: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return ops.Shutdown(sctx)
	})
	g.Go(func() error {
		waitReady(ctx, c.SyncTimeout, idx, fetcher, log)
		for _, l := range lns {
			log.Info("serving", "addr", l.Addr().String(), "tls", l.TLS != nil, "node", c.NodeName)
		}
		return proxy.ServeAll(ctx, lns...)
	})
	return g.Wait()
}

// entryLeeway is the auth API's for entry codes: an entry code it would
// refuse as expired is refused here, without a call.
const entryLeeway = 2 * time.Second

// proxyOptions is the node proxy's Options as the settings give them,
// without the parts serve builds (caches, verifiers, handshaker, token,
// activity, logging, metrics).
func (c config) proxyOptions() nodeproxy.Options {
	trusted, _ := c.trustedProxies() // validated
	return nodeproxy.Options{
		NodeName: c.NodeName, Namespace: c.Namespace,
		AuthAPI: c.AuthAPIURL, AuthAPIInternal: c.authAPIInternalURL(), AuthProxyHeader: c.AuthProxyHeader,
		CookieName: c.CookieName, CookieSecure: c.CookieSecure, CookieMaxAge: c.CookieMaxAge,
		RoutingMode: userorigin.Mode(c.RoutingMode), UserDomain: c.UserDomain, PublicOrigin: c.PublicOrigin,
		OriginCookieName: c.OriginCookieName,
		PeerPort:         c.peerPort(), TrustedProxies: trusted,
		MaxBodyBytes: int64(c.MaxBodyMB) << 20, BufferBodyBytes: c.BufferBodyKB << 10,
		MaxInFlightPerUser: c.MaxInFlightPerUser, WSMaxMessageBytes: int64(c.WSMaxMessageBytes),
		HeaderAllowlist: settings.SplitList(c.HeaderAllowlist), MaxHeaderBytes: c.MaxHeaderKB << 10,
		HeaderTimeout: c.HeaderTimeout, BodyTimeout: c.BodyTimeout, WriteTimeout: c.WriteTimeout,
		IdleTimeout: c.IdleTimeout, UpstreamIdleTimeout: c.UpstreamIdleTimeout, RetryAfter: c.RetryAfter,
		DrainTimeout: c.ShutdownTimeout, WakeTimeout: c.WakeTimeout,
	}
}

// listen binds the ops listener and the proxy's: plain, then HTTPS when
// configured, with its certificate loaded and watched for changes.
func listen(c config, log *slog.Logger) ([]nodeproxy.Listener, net.Listener, error) {
	var cert *nodeproxy.Certificate
	addrs := []string{c.OpsAddr, c.ListenAddr}
	if c.tlsEnabled() {
		var err error
		cert, err = nodeproxy.NewCertificate(nodeproxy.CertificateOptions{CertFile: c.TLSCertFile, KeyFile: c.TLSKeyFile, Logger: log})
		if err != nil {
			return nil, nil, fmt.Errorf("load TLS certificate: %w", err)
		}
		addrs = append(addrs, c.TLSListenAddr)
	}
	bound := make([]net.Listener, 0, len(addrs))
	for _, addr := range addrs {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			for _, b := range bound {
				b.Close()
			}
			return nil, nil, fmt.Errorf("listen on %s: %w", addr, err)
		}
		bound = append(bound, ln)
	}
	lns := []nodeproxy.Listener{{Listener: bound[1]}}
	if cert != nil {
		lns = append(lns, nodeproxy.Listener{Listener: bound[2], TLS: cert.TLSConfig()})
	}
	return lns, bound[0], nil
}

// waitReady holds the start of serving until the caches are warm, so the
// first requests are not refused for want of an account, but never longer
// than timeout.
func waitReady(ctx context.Context, timeout time.Duration, idx *informer.Index, fetcher *jwt.JWKSFetcher, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := idx.WaitForSync(ctx); err != nil {
		log.Warn("serving before the informers synced", "err", err)
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for !fetcher.Ready() {
		select {
		case <-ctx.Done():
			log.Warn("serving before the JWKS loaded")
			return
		case <-t.C:
		}
	}
}
