package nodeproxy

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/testing/logbuf"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

const (
	testIssuer   = "sandgate-authapi"
	testAudience = "sandgate"
	testNS       = "tenants"
	testHost     = "gw.example.test"
	testSAToken  = "sa-token-of-node-proxy"
	testLifetime = 10 * time.Minute
)

// accessLines returns the access log records.
func accessLines(t *testing.T, s *logbuf.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(s.String(), "\n") {
		if !strings.Contains(line, `"component":"access"`) {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("access log line is not JSON: %q", line)
		}
		out = append(out, m)
	}
	return out
}

// node is one node proxy with its own log root and handshaker.
type node struct {
	name    string
	logRoot string
	hs      *handshake.Handshaker
	proxy   *Proxy
	addr    string // where the proxy listens
	tlsAddr string // where it serves HTTPS, with harnessOpts.tls
	reg     *prometheus.Registry
}

// harness is node proxies, pods, a session signer and an auth API stand-in.
type harness struct {
	t      testing.TB
	clock  *testkit.Clock // tokens, verifier and proxy
	ring   *jwt.KeyRing
	signer *jwt.Signer
	ver    *jwt.Verifier
	dir    *fakeDir
	logs   *logbuf.Buffer
	auth   *fakeAuthAPI
	nodes  map[string]*node
	pods   map[string]*pod // by user
	client *http.Client
	// appEvents is harnessOpts.appEvents.
	appEvents time.Duration
}

type harnessOpts struct {
	peers  bool // run a second node, node-b, for hops
	modify func(*Options)
	tls    *tls.Config // also serve HTTPS on each node, with this config
	// appEvents spaces the SSE events of the users' apps; zero means 200ms.
	appEvents time.Duration
}

func newHarness(t testing.TB, ho harnessOpts) *harness {
	t.Helper()
	h := &harness{
		t:     t,
		clock: testkit.NewOffsetClock(),
		dir:   &fakeDir{entries: map[string]informer.Entry{}, nodeIPs: map[string]bool{}},
		logs:  &logbuf.Buffer{},
		nodes: map[string]*node{},
		pods:  map[string]*pod{},

		appEvents: ho.appEvents,
	}
	h.ring = jwt.NewKeyRing(time.Now().Add(-time.Hour))
	var err error
	if h.signer, err = jwt.NewSigner(jwt.SignerOptions{KeyRing: h.ring, Issuer: testIssuer, Audience: testAudience, Lifetime: testLifetime, Now: h.clock.Now}); err != nil {
		t.Fatal(err)
	}
	data, err := h.ring.JWKS()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := jwt.ParseJWKS(data)
	if err != nil {
		t.Fatal(err)
	}
	if h.ver, err = jwt.NewVerifier(jwt.VerifierOptions{Keys: keys, Issuer: testIssuer, Audience: testAudience, Leeway: time.Second, Now: h.clock.Now}); err != nil {
		t.Fatal(err)
	}
	h.auth = startFakeAuthAPI(t, h)
	h.client = &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{DisableCompression: true},
	}
	t.Cleanup(h.client.CloseIdleConnections)

	// node-a serves on 127.0.0.1; node-b, when asked for, on 127.0.0.2
	// with the same port, as a DaemonSet would.
	a := h.startNode("node-a", "127.0.0.1:0", ho)
	if ho.peers {
		_, port, _ := net.SplitHostPort(a.addr)
		h.startNode("node-b", "127.0.0.2:"+port, ho)
	}
	return h
}

// startNode runs a node proxy listening on addr.
func (h *harness) startNode(name, addr string, ho harnessOpts) *node {
	t := h.t
	n := &node{name: name, logRoot: t.TempDir(), reg: prometheus.NewRegistry()}
	var err error
	if n.hs, err = handshake.New(handshake.Options{LogRoot: n.logRoot, Registerer: n.reg}); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	n.addr = ln.Addr().String()
	_, port, _ := net.SplitHostPort(n.addr)
	o := Options{
		NodeName:            name,
		Directory:           &nodeDir{h.dir, name},
		Verifier:            h.ver,
		Handshaker:          n.hs,
		Peers:               h.dir,
		HopKey:              testHopKey,
		AuthAPI:             "http://" + h.auth.addr,
		ServiceAccountToken: func() (string, error) { return testSAToken, nil },
		PeerPort:            atoi(t, port),
		Logger:              slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", name),
		Registerer:          n.reg,
		Gatherer:            n.reg,
		Now:                 h.clock.Now,
		DrainTimeout:        2 * time.Second,
	}
	if ho.modify != nil {
		ho.modify(&o)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if n.proxy, err = New(o); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	lns := []Listener{{Listener: ln}}
	if ho.tls != nil {
		host, _, _ := net.SplitHostPort(n.addr)
		tln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			t.Fatal(err)
		}
		n.tlsAddr = tln.Addr().String()
		lns = append(lns, Listener{Listener: tln, TLS: ho.tls})
	}
	go func() { done <- n.proxy.ServeAll(ctx, lns...) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		n.hs.Close()
	})
	h.nodes[name] = n
	return n
}

// nodeDir shows one node's view of the shared directory: a pod is local
// only on its own node.
type nodeDir struct {
	d    *fakeDir
	node string
}

func (n *nodeDir) WatchAccount(user string, changed func()) func() {
	return n.d.WatchAccount(user, changed)
}

func (n *nodeDir) Lookup(user string) (informer.Entry, error) {
	e, err := n.d.lookupOn(n.node, user)
	if err == nil && e.Route.State == informer.StateReady {
		e.Route.Local = e.Route.Node == n.node
		if !e.Route.Local {
			e.Route.Pod = informer.Pod{}
		}
	}
	return e, err
}

func atoi(t testing.TB, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// testHopKey is the harness nodes' shared hop key.
var testHopKey = []byte("harness-hop-key-of-32-bytes-or-more")

// nodeIPs of the harness nodes.
var nodeIPs = map[string]string{"node-a": "127.0.0.1", "node-b": "127.0.0.2"}

// addUser creates user's account (bearer token "tok-<user>") and a Ready
// sandbox pod on node.
func (h *harness) addUser(user, nodeName string) *pod {
	h.t.Helper()
	n := h.nodes[nodeName]
	uid := fmt.Sprintf("%08x-0000-4000-8000-%012x", len(h.pods)+1, len(h.pods)+1)
	p := startPod(h.t, n.logRoot, "sb-"+user, uid, h.appEvents)
	h.pods[user] = p
	h.dir.set(user, informer.Entry{
		Account: account.Account{User: user, UID: uid, TokenHash: account.HashToken("tok-" + user), Epoch: 1},
		Route: informer.Route{
			State: informer.StateReady, Sandbox: "sb-" + user, Node: nodeName, NodeIP: nodeIPs[nodeName], Local: true,
			Pod: informer.Pod{Namespace: testNS, Name: p.name, UID: uid, Container: "dsh", Addr: p.addr},
		},
	})
	return p
}

// session signs a session token for user at the harness clock.
func (h *harness) session(user string) string {
	h.t.Helper()
	return h.sessionSignedBy(h.signer, user)
}

// foreignSigner signs the harness's tokens with a key that neither the node
// proxies nor the auth API hold.
func (h *harness) foreignSigner() *jwt.Signer {
	h.t.Helper()
	s, err := jwt.NewSigner(jwt.SignerOptions{KeyRing: jwt.NewKeyRing(time.Now()), Issuer: testIssuer, Audience: testAudience, Lifetime: testLifetime, Now: h.clock.Now})
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// sessionSignedBy is a session token for user signed by s.
func (h *harness) sessionSignedBy(s *jwt.Signer, user string) string {
	h.t.Helper()
	tok, err := s.Sign(jwt.Claims{User: user, SessionID: h.sessionID(user), Epoch: 1})
	if err != nil {
		h.t.Fatal(err)
	}
	return tok
}

// sessionID is a new session id of user's account, bound to its UID.
func (h *harness) sessionID(user string) string {
	e, _ := h.dir.Lookup(user)
	return account.NewSessionID(e.Account.UID)
}

// verifierFor is a verifier of the harness keys for tokens of audience aud.
func (h *harness) verifierFor(aud string) *jwt.Verifier {
	h.t.Helper()
	data, err := h.ring.JWKS()
	if err != nil {
		h.t.Fatal(err)
	}
	keys, err := jwt.ParseJWKS(data)
	if err != nil {
		h.t.Fatal(err)
	}
	v, err := jwt.NewVerifier(jwt.VerifierOptions{Keys: keys, Issuer: testIssuer, Audience: aud, Leeway: time.Second, Now: h.clock.Now})
	if err != nil {
		h.t.Fatal(err)
	}
	return v
}
