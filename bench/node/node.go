// Package node builds a node proxy the way cmd/nodeproxy wires it, from
// the bench's fed informer caches: the production nodeproxy.Proxy with a
// real informer.Index, a real cached JWT verifier, an activity tracker,
// metrics on a private registry and the logs as JSON to Options.Log, with
// the shipped summary of plain successes in the access log.
// The handshake is the real Handshaker when Options give one, and
// otherwise a warm cache stand-in.
package node

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandgate/sandgate/bench/feed"
	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/nodeproxy"
	"github.com/sandgate/sandgate/internal/nodeproxyd"
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
	// Name is the node's name.
	Name string
	// Index is the node's informer caches, synced.
	Index *informer.Index
	// JWKS verifies session tokens.
	JWKS []byte
	// PeerPort is the port other nodes' proxies listen on.
	PeerPort int
	// Registerer receives the proxy's metrics; nil uses a fresh registry.
	Registerer prometheus.Registerer
	// Log receives the proxy's JSON log lines; nil discards them.
	Log io.Writer
	// Handshaker gets the apps' cookies; nil answers from a warm cache.
	Handshaker nodeproxy.Handshaker
}

// New builds the node proxy. Per-user limits are lifted, since the bench
// drives up to 10,000 connections as one user.
func New(o Options) (*nodeproxy.Proxy, error) {
	keys, err := jwt.ParseJWKS(o.JWKS)
	if err != nil {
		return nil, fmt.Errorf("parse JWKS: %w", err)
	}
	ver, err := jwt.NewVerifier(jwt.VerifierOptions{Keys: keys, Issuer: Issuer, Audience: Audience, Leeway: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("build verifier: %w", err)
	}
	reg := o.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	var hs nodeproxy.Handshaker = warmHandshake{}
	if o.Handshaker != nil {
		hs = o.Handshaker
	}
	p, err := nodeproxy.New(nodeproxy.Options{
		NodeName: o.Name, Directory: o.Index, Verifier: ver, Handshaker: hs, Peers: o.Index,
		AuthAPI: "http://127.0.0.1:1", PeerPort: o.PeerPort,
		Activity: activity.New(activity.Options{}), Namespace: Namespace,
		MaxInFlightPerUser: 1 << 20, Registerer: reg,
		Logger:           slog.New(slog.NewJSONHandler(cmp.Or[io.Writer](o.Log, io.Discard), nil)),
		AccessLogSummary: nodeproxyd.DefaultAccessLogSummary,
	})
	if err != nil {
		return nil, fmt.Errorf("build node proxy: %w", err)
	}
	return p, nil
}

// warmHandshake answers as a handshake cache that already holds the app's
// cookie for the pod.
type warmHandshake struct{}

// Cookie returns the cached app cookie.
func (warmHandshake) Cookie(context.Context, handshake.Target) (string, error) {
	return "dsh-auth-bench=v", nil
}

// Refresh returns the cached app cookie.
func (warmHandshake) Refresh(context.Context, handshake.Target, string) (string, error) {
	return "dsh-auth-bench=v", nil
}

// warmHandshake stands in for *handshake.Handshaker.
var _ nodeproxy.Handshaker = warmHandshake{}
