// Package node runs a node proxy the way cmd/nodeproxy does: the shipped
// assembly (internal/requestpath/nodeproxyd) with the bench's settings, its informer
// caches fed from the bench's lists instead of an API server, its session
// keys from a JWKS this process serves, and its launch tokens read by the
// real handshaker from CRI log files the bench writes. Its logs go as JSON
// to Options.Log, with the shipped summary of plain successes in the
// access log.
package node

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/sandgate/sandgate/bench/feed"
	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/httpprobe"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/requestpath/nodeproxyd"
)

// Issuer and Audience of the bench's session tokens.
const (
	Issuer   = "sandgate-bench"
	Audience = "sandgate"
)

// Namespace holds the bench's accounts.
const Namespace = "bench"

// Keys signs session tokens and publishes the JWKS node proxies verify
// them with.
type Keys struct {
	signer *jwt.Signer
	// JWKS is the public key set, as a node proxy fetches it.
	JWKS []byte
}

// NewKeys creates a signing key. Tokens live an hour, so no node proxy
// renews one while the bench runs.
func NewKeys() (*Keys, error) {
	ring := jwt.NewKeyRing(time.Now().Add(-time.Minute))
	s, err := jwt.NewSigner(jwt.SignerOptions{KeyRing: ring, Issuer: Issuer, Audience: Audience, Lifetime: time.Hour})
	if err != nil {
		return nil, fmt.Errorf("build signer: %w", err)
	}
	data, err := ring.JWKS()
	if err != nil {
		return nil, fmt.Errorf("publish keys: %w", err)
	}
	return &Keys{signer: s, JWKS: data}, nil
}

// Session returns a session token for user at epoch 1, the epoch feed's
// claims carry, bound to user's claim UID.
func (k *Keys) Session(user string) (string, error) {
	tok, err := k.signer.Sign(jwt.Claims{User: user, SessionID: account.NewSessionID(feed.ClaimUID(user)), Epoch: 1})
	if err != nil {
		return "", fmt.Errorf("sign session: %w", err)
	}
	return tok, nil
}

// Options shape a node proxy.
type Options struct {
	// Name is the node's name; IP the address it listens on.
	Name, IP string
	// Sources feed the informer caches.
	Sources nodeproxyd.Sources
	// JWKS verifies session tokens.
	JWKS []byte
	// PeerPort is the port other nodes' proxies listen on.
	PeerPort int
	// LogRoot holds the pods' CRI log files, read for launch tokens.
	LogRoot string
	// Log receives the proxy's JSON log lines; nil discards them.
	Log io.Writer
}

// Proxy is a running node proxy.
type Proxy struct {
	*nodeproxyd.Daemon
	keys *http.Server
	done chan error
}

// Start assembles the node proxy and runs it until ctx ends; it returns
// once the proxy serves (informers synced, keys fetched). Per-user limits
// are lifted, since the bench drives up to 10,000 connections as one user,
// and activity reports go nowhere (every hour).
func Start(ctx context.Context, o Options) (*Proxy, error) {
	keysLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the JWKS: %w", err)
	}
	keys := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(o.JWKS)
	}), ReadHeaderTimeout: 5 * time.Second}
	go keys.Serve(keysLn)

	c := nodeproxyd.Defaults()
	c.NodeName, c.Namespace, c.LogRoot = o.Name, Namespace, o.LogRoot
	c.ListenAddr, c.OpsAddr, c.PeerPort = net.JoinHostPort(o.IP, "0"), "localhost:0", o.PeerPort
	c.Issuer, c.Audience, c.JWKSURL = Issuer, Audience, "http://"+keysLn.Addr().String()+"/jwks"
	c.AuthAPIURL, c.SATokenFile, c.ReportInterval = "http://127.0.0.1:1", "", time.Hour
	c.CookieSecure, c.AllowInsecure, c.MaxInFlightPerUser = false, true, 1<<20
	if err := c.Validate(); err != nil {
		keys.Close()
		return nil, fmt.Errorf("node proxy settings: %w", err)
	}
	log := slog.New(slog.NewJSONHandler(cmp.Or[io.Writer](o.Log, io.Discard), nil))
	d, err := nodeproxyd.Assemble(c, nodeproxyd.Deps{Logger: log, Sources: o.Sources})
	if err != nil {
		keys.Close()
		return nil, err
	}
	p := &Proxy{Daemon: d, keys: keys, done: make(chan error, 1)}
	go func() { p.done <- d.Run(ctx) }()
	if err := p.awaitReady(ctx); err != nil {
		return nil, errors.Join(err, p.Wait())
	}
	return p, nil
}

// awaitReady polls the proxy's /readyz until it passes or the proxy stops.
func (p *Proxy) awaitReady(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+p.OpsAddr()+"/readyz", nil)
	if err != nil {
		return fmt.Errorf("build readiness probe: %w", err)
	}
	for httpprobe.OK(http.DefaultClient, req) != nil {
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("node proxy stopped before it was ready: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// Wait waits for the proxy to stop once Start's context ends, and stops
// serving the JWKS.
func (p *Proxy) Wait() error {
	err := <-p.done
	p.done <- err
	p.keys.Close()
	return err
}
