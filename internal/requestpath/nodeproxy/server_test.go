package nodeproxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestAuthAPIForwarding: paths outside /u/ reach the auth API with Host,
// cookies and credentials kept, X-Forwarded-For naming the untrusted peer
// alone, and its cookies passed back; its internal endpoints are not
// reachable from outside.
func TestAuthAPIForwarding(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	resp := h.do(http.MethodPost, "node-a", "/login?next=%2F", strings.NewReader("user=alice"), map[string]string{
		"Authorization": "Bearer tok", "Cookie": "a=1", "X-Forwarded-For": "198.51.100.1",
		"X-Forwarded-User": "mallory", "X-Sandgate-Hop": "x", "Content-Type": "application/x-www-form-urlencoded",
	})
	body := readAll(t, resp)
	if resp.StatusCode != 200 || body != "auth api: /login" {
		t.Fatalf("auth API answer %d %q", resp.StatusCode, body)
	}
	if sc := resp.Header.Get("Set-Cookie"); !strings.HasPrefix(sc, DefaultCookieName+"=minted") {
		t.Errorf("auth API cookie not passed back: %q", sc)
	}
	seen := h.auth.seen.Last()
	if seen.Host != testHost || seen.Header.Get("Authorization") != "Bearer tok" || seen.Header.Get("Cookie") != "a=1" {
		t.Errorf("auth API saw Host %q headers %v", seen.Host, seen.Header)
	}
	if got := seen.Header.Get("X-Forwarded-For"); got != "127.0.0.1" {
		t.Errorf("X-Forwarded-For %q, want the untrusted peer alone", got)
	}
	for _, name := range []string{"X-Forwarded-User", "X-Sandgate-Hop"} {
		if v := seen.Header.Get(name); v != "" {
			t.Errorf("%s reached the auth API from an untrusted peer: %q", name, v)
		}
	}
	resp = h.do(http.MethodPost, "node-a", "/internal/v1/sessions/renew", strings.NewReader(`{"token":"x"}`), nil)
	readAll(t, resp)
	if resp.StatusCode != http.StatusNotFound || h.auth.renewals.Load() != 0 {
		t.Errorf("internal endpoint from outside: %d, %d renewals", resp.StatusCode, h.auth.renewals.Load())
	}
}

func TestOpsEndpoints(t *testing.T) {
	var ready atomic.Bool
	reg := prometheus.NewRegistry()
	p, err := New(Options{
		NodeName: "n", Directory: &fakeDir{}, Verifier: nil, Handshaker: nil, AuthAPI: "http://auth.test",
		PeerPort: 1, Registerer: reg, Gatherer: reg,
		ReadyChecks: []ReadyCheck{{Name: "informers", Ready: ready.Load}},
	})
	if err == nil || p != nil {
		t.Fatal("New accepted missing collaborators")
	}
	h := newHarness(t, harnessOpts{modify: func(o *Options) {
		o.ReadyChecks = []ReadyCheck{{Name: "informers", Ready: ready.Load}}
	}})
	srv := httptest.NewServer(h.nodes["node-a"].proxy.OpsHandler())
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, readAll(t, resp)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz %d", code)
	}
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "informers") {
		t.Errorf("/readyz before sync: %d %q", code, body)
	}
	ready.Store(true)
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("/readyz after sync: %d", code)
	}
	readAll(t, h.get("node-a", "/u/nobody/", nil))
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, `sandgate_nodeproxy_requests_total{code="4xx",route="user"} 1`) {
		t.Errorf("/metrics %d:\n%s", code, body)
	}
}

// TestGracefulShutdown: on shutdown WebSockets get 1001, event streams
// end, /readyz fails, and Serve returns.
func TestGracefulShutdown(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.addUser("alice", "node-a")
	// A second proxy on the same collaborators, which this test stops.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p, cancel, done := h.stoppingProxy(ln, nil)

	c, _, err := h.dialWS("stopping", "/u/alice/api/ws", http.Header{"Cookie": {cookie(h.session("alice"))}})
	if err != nil {
		t.Fatal(err)
	}
	stream := h.get("stopping", "/u/alice/api/events", map[string]string{"Cookie": cookie(h.session("alice"))})
	if stream.StatusCode != 200 {
		t.Fatalf("event stream %d", stream.StatusCode)
	}
	streamDone := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, stream.Body); streamDone <- err }()

	start := time.Now()
	cancel()
	if got := closeCode(t, c); got != websocket.CloseGoingAway {
		t.Errorf("WebSocket closed with %d, want 1001", got)
	}
	testkit.Receive(t, "the event stream closed by the shutdown", streamDone)
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if len(p.notReady()) == 0 {
		t.Error("/readyz still passes after shutdown")
	}
	t.Logf("shutdown took %v", time.Since(start))
}

// TestShutdownWaitsForARefusedBridge: a WebSocket whose 101 goes out as
// the shutdown begins is refused with 1001 on its own goroutine, and Serve
// does not return before that connection is closed, so a process that exits
// when Serve returns cannot cut the 1001 off. The 1001 is held here until
// the proxy closes the connection, at the drain deadline.
func TestShutdownWaitsForARefusedBridge(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.addUser("alice", "node-a")
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &holdingListener{Listener: inner, closed: make(chan struct{}), conns: make(chan *holdingConn, 1)}
	_, cancel, done := h.stoppingProxy(ln, nil)

	dialed := make(chan error, 1)
	go func() {
		_, _, err := h.dialWS("stopping", "/u/alice/api/ws", http.Header{"Cookie": {cookie(h.session("alice"))}})
		dialed <- err
	}()
	c := testkit.Receive(t, "the proxy's connection", ln.conns)
	testkit.Receive(t, "the 101 held", c.held101)
	cancel()
	testkit.Receive(t, "the listener closed by the shutdown", ln.closed)
	close(c.release101)
	if err := testkit.Receive(t, "the client's upgrade", dialed); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	frame := testkit.Receive(t, "the refused bridge's close frame", c.heldFrame)
	if len(frame) < 4 || frame[0] != 0x88 || int(frame[2])<<8|int(frame[3]) != websocket.CloseGoingAway {
		t.Errorf("refused bridge wrote % x, want a close frame with 1001", frame)
	}
	if err := testkit.Receive(t, "Serve's return", done); err != nil {
		t.Errorf("Serve: %v", err)
	}
	select {
	case <-c.closed:
	default:
		t.Error("Serve returned with the refused bridge's connection still open")
	}
}

// holdingListener hands the test each connection it accepts.
type holdingListener struct {
	net.Listener
	closeOnce sync.Once
	closed    chan struct{}
	conns     chan *holdingConn
}

func (l *holdingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	hc := &holdingConn{Conn: c, held101: make(chan struct{}), release101: make(chan struct{}),
		heldFrame: make(chan []byte, 1), closed: make(chan struct{})}
	l.conns <- hc
	return hc, nil
}

func (l *holdingListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

// holdingConn holds its 101 until release101 is closed, and every write
// after it until the connection is closed.
type holdingConn struct {
	net.Conn
	held101, release101 chan struct{}
	heldFrame           chan []byte
	upgraded            atomic.Bool
	closeOnce           sync.Once
	closed              chan struct{}
}

func (c *holdingConn) Write(b []byte) (int, error) {
	if c.upgraded.Load() {
		c.heldFrame <- bytes.Clone(b)
		<-c.closed
		return 0, net.ErrClosed
	}
	if bytes.HasPrefix(b, []byte("HTTP/1.1 101 ")) {
		close(c.held101)
		<-c.release101
		c.upgraded.Store(true)
	}
	return c.Conn.Write(b)
}

func (c *holdingConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// TestLogsHoldNoSecrets runs traffic with every kind of credential and
// checks that none appears in any log line.
func TestLogsHoldNoSecrets(t *testing.T) {
	h := newHarness(t, harnessOpts{peers: true})
	alice := h.addUser("alice", "node-a")
	h.addUser("carol", "node-b")
	tok := h.session("alice")
	echo(t, h.get("node-a", "/u/alice/api/echo?token=querysecret", map[string]string{"Cookie": cookie(tok)}))
	echo(t, h.get("node-a", "/u/carol/api/echo", map[string]string{"Authorization": "Bearer tok-carol"}))
	readAll(t, h.get("node-a", "/u/alice/", map[string]string{"Cookie": cookie(tok + "x")}))
	h.clock.Advance(testLifetime + time.Minute)
	readAll(t, h.get("node-a", "/u/alice/api/echo", map[string]string{"Cookie": cookie(tok)}))
	logs := h.logs.String()
	secrets := []string{tok, "tok-carol", "querysecret", launchToken(t, alice), testSAToken}
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("a log line contains a secret (%d bytes)", len(s))
		}
	}
	if strings.Contains(logs, "dsh-auth-") {
		t.Error("a log line names the app's cookie")
	}
	if n := len(accessLines(t, h.logs)); n < 4 {
		t.Errorf("%d access log lines, want one per request", n)
	}
}

// TestServerLimits: a header block over MaxHeaderBytes gets 431, and a
// client that sends its headers too slowly is disconnected.
func TestServerLimits(t *testing.T) {
	h := newHarness(t, harnessOpts{modify: func(o *Options) {
		o.MaxHeaderBytes = 4096
		o.HeaderTimeout = 300 * time.Millisecond
	}})
	status := h.rawRequest("node-a", "GET /u/alice/ HTTP/1.1\r\nHost: "+testHost+"\r\nX-Big: "+strings.Repeat("a", 8000)+"\r\n\r\n")
	if !strings.Contains(status, " 431 ") {
		t.Errorf("oversized headers: %q, want 431", status)
	}
	// Timed from before the dial, so the server's timer cannot have
	// started earlier.
	start := time.Now()
	c, err := net.Dial("tcp", h.nodes["node-a"].addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /u/alice/ HTTP/1.1\r\nHost: ")
	c.SetReadDeadline(time.Now().Add(testkit.Timeout))
	line, err := bufio.NewReader(c).ReadString('\n')
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("slow client still connected after %v", testkit.Timeout)
	}
	if line != "" && !strings.Contains(line, " 408 ") {
		t.Errorf("slow client answered %q, want 408 or a closed connection", line)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("slow client dropped after %v, before the 300ms header timeout", d)
	}
}
