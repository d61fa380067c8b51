package nodeproxy

import (
	"bufio"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/testing/logbuf"
	"github.com/sandgate/sandgate/internal/testing/sim/agentapp"
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

// fakeDir is a Directory the test edits.
type fakeDir struct {
	mu      sync.Mutex
	entries map[string]informer.Entry
	nodeIPs map[string]bool
	changed chan struct{} // closed and replaced at every edit
	// watches are WatchAccount's subscribers by user, called after
	// every set, edit or remove of the user.
	watches map[string]map[*func()]bool
	// missing is Lookup's error for a user it does not hold:
	// informer.ErrNoAccount unless set.
	missing error
}

// WatchAccount makes the directory an AccountWatcher, as the informer is.
func (d *fakeDir) WatchAccount(user string, changed func()) func() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.watches == nil {
		d.watches = map[string]map[*func()]bool{}
	}
	if d.watches[user] == nil {
		d.watches[user] = map[*func()]bool{}
	}
	d.watches[user][&changed] = true
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		delete(d.watches[user], &changed)
	}
}

// notify calls user's watchers, outside the lock as the informer does.
func (d *fakeDir) notify(user string) {
	d.mu.Lock()
	var fns []func()
	for f := range d.watches[user] {
		fns = append(fns, *f)
	}
	d.mu.Unlock()
	for _, f := range fns {
		f()
	}
}

// remove deletes user's account.
func (d *fakeDir) remove(user string) {
	d.mu.Lock()
	delete(d.entries, user)
	d.editedLocked()
	d.mu.Unlock()
	d.notify(user)
}

// watch returns a channel closed at the next edit.
func (d *fakeDir) watch() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.changed == nil {
		d.changed = make(chan struct{})
	}
	return d.changed
}

// editedLocked wakes the watchers of the last edit.
func (d *fakeDir) editedLocked() {
	if d.changed != nil {
		close(d.changed)
		d.changed = nil
	}
}

func (d *fakeDir) Lookup(user string) (informer.Entry, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.entries[user]
	switch {
	case !ok && d.missing != nil:
		return informer.Entry{}, d.missing
	case !ok:
		return informer.Entry{}, informer.ErrNoAccount
	}
	return e, nil
}

func (d *fakeDir) IsNodeIP(ip string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.nodeIPs[ip]
}

func (d *fakeDir) set(user string, e informer.Entry) {
	d.mu.Lock()
	d.entries[user] = e
	d.editedLocked()
	d.mu.Unlock()
	d.notify(user)
}

func (d *fakeDir) edit(user string, f func(*informer.Entry)) {
	d.mu.Lock()
	e := d.entries[user]
	f(&e)
	d.entries[user] = e
	d.editedLocked()
	d.mu.Unlock()
	d.notify(user)
}

// criLog turns an app's stdout into CRI log records in its container's log
// file, as the kubelet would, and keeps the lines for the test.
type criLog struct {
	mu    sync.Mutex
	path  string
	lines []string
}

func (c *criLog) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := os.OpenFile(c.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	for line := range strings.SplitSeq(strings.TrimSuffix(string(p), "\n"), "\n") {
		c.lines = append(c.lines, line)
		fmt.Fprintf(f, "%s stdout F %s\n", time.Now().UTC().Format(time.RFC3339Nano), line)
	}
	return len(p), nil
}

// launches counts launch lines.
func (c *criLog) launches() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, l := range c.lines {
		if strings.Contains(l, "?token=") {
			n++
		}
	}
	return n
}

var appRequestLine = regexp.MustCompile(`^dsh web: [A-Z]+ (\S+) \d+ \d+ms$`)

// requests lists the paths of requests the app has answered.
func (c *criLog) requests() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, l := range c.lines {
		if m := appRequestLine.FindStringSubmatch(l); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// pod is one simulated sandbox pod: an agent app on loopback whose stdout
// lands in a CRI log file under its node's log root.
type pod struct {
	t      testing.TB
	name   string
	uid    string
	addr   string
	events time.Duration
	log    *criLog
	cancel context.CancelFunc
	done   chan error
}

// startPod runs an agent app for a pod on its node's log root, sending
// SSE events every events (zero means 200ms).
func startPod(t testing.TB, logRoot, name, uid string, events time.Duration) *pod {
	t.Helper()
	dir := filepath.Join(logRoot, testNS+"_"+name+"_"+uid, "dsh")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := &pod{t: t, name: name, uid: uid, events: cmp.Or(events, 200*time.Millisecond), log: &criLog{path: filepath.Join(dir, "0.log")}}
	p.start(t.TempDir(), "127.0.0.1:0")
	t.Cleanup(p.stop)
	return p
}

func (p *pod) start(dataDir, addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	app := agentapp.New(agentapp.Options{
		Stdout: p.log, DataDir: dataDir, TrustedHosts: []string{testHost},
		EventInterval: p.events, ShutdownTimeout: time.Second,
	})
	before := p.log.launches()
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.done = cancel, make(chan error, 1)
	go func() { p.done <- app.Serve(ctx, ln) }()
	// Ready once the launch line is logged, like the kubelet's probe.
	testkit.Eventually(p.t, "app launch line", func() bool { return p.log.launches() > before })
}

func (p *pod) stop() {
	if p.cancel != nil {
		p.cancel()
		<-p.done
		p.cancel = nil
	}
}

// restart replaces the app with a new process on the same address: a new
// launch token and new cookies, as after a container restart.
func (p *pod) restart() {
	p.stop()
	p.start(p.t.TempDir(), p.addr)
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
	e, err := n.d.Lookup(user)
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

// url is node's address for path.
func (h *harness) url(nodeName, path string) string {
	return "http://" + h.nodes[nodeName].addr + path
}

// get sends a browser-like GET with Host testHost and the given headers.
func (h *harness) get(nodeName, path string, hdr map[string]string) *http.Response {
	h.t.Helper()
	return h.do(http.MethodGet, nodeName, path, nil, hdr)
}

func (h *harness) do(method, nodeName, path string, body io.Reader, hdr map[string]string) *http.Response {
	h.t.Helper()
	return h.send(h.client, testkit.Request{Method: method, URL: h.url(nodeName, path), Header: hdr, Body: body})
}

// send sends r through client with Host testHost, unless r's headers name
// another, and closes the response's body when the test ends.
func (h *harness) send(client *http.Client, r testkit.Request) *http.Response {
	h.t.Helper()
	r.Host = testHost
	resp := r.Send(h.t, client)
	h.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// cookie is the Cookie header carrying tok as the session.
func cookie(tok string) string { return DefaultCookieName + "=" + tok }

// readBody reads and closes resp's body.
func readAll(t testing.TB, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// echo decodes an /api/echo reply.
func echo(t testing.TB, resp *http.Response) agentapp.Echo {
	t.Helper()
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("echo status %d: %s", resp.StatusCode, body)
	}
	var e agentapp.Echo
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("echo body %q: %v", body, err)
	}
	return e
}

// rawRequest writes a request verbatim to node and returns the response's
// status line (or "" when the connection closes first).
func (h *harness) rawRequest(nodeName, raw string) string {
	h.t.Helper()
	return rawStatus(h.t, h.nodes[nodeName].addr, raw)
}

// rawStatus writes raw to addr and returns the status line of the answer.
func rawStatus(t testing.TB, addr, raw string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	return statusLine(c, raw)
}

// dialFrom opens a connection to addr from the local address from, closed
// when the test ends.
func dialFrom(t *testing.T, addr, from string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second))
	return c
}

// statusLine writes raw to c and returns the status line of the answer,
// "" when the connection closes first.
func statusLine(c net.Conn, raw string) string {
	io.WriteString(c, raw)
	line, _ := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line)
}

// stoppingProxy is a second proxy on node-a's collaborators, with
// modify's changes, serving on ln and known as node "stopping", for a test
// that shuts it down: cancel starts the shutdown and done yields Serve's
// return. Cleanup stops it and waits for Serve.
func (h *harness) stoppingProxy(ln net.Listener, modify func(*Options)) (p *Proxy, cancel func(), done <-chan error) {
	h.t.Helper()
	o := h.nodes["node-a"].proxy.opts
	o.Registerer, o.Gatherer = nil, nil
	o.Logger = slog.New(slog.NewJSONHandler(h.logs, nil))
	if modify != nil {
		modify(&o)
	}
	if err := o.Validate(); err != nil {
		h.t.Fatal(err)
	}
	p, err := New(o)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		served <- p.Serve(ctx, ln)
	}()
	h.t.Cleanup(func() {
		stop()
		<-finished
	})
	h.nodes["stopping"] = &node{name: "stopping", proxy: p, addr: ln.Addr().String()}
	return p, stop, served
}
