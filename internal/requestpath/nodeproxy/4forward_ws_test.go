package nodeproxy

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// dialWS opens a WebSocket to path on node as a browser on testHost would.
func (h *harness) dialWS(nodeName, path string, hdr http.Header) (*websocket.Conn, *http.Response, error) {
	h.t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	if hdr == nil {
		hdr = http.Header{}
	}
	hdr.Set("Host", testHost)
	hdr.Set("Origin", "http://"+testHost)
	u := "ws://" + h.nodes[nodeName].addr + path
	c, resp, err := d.DialContext(context.Background(), u, hdr)
	if c != nil {
		h.t.Cleanup(func() { c.Close() })
	}
	return c, resp, err
}

// closeCode reads until the connection closes and returns the close code,
// waiting up to testkit.Timeout: a close caused by an account change
// travels through the API server and the informer first.
func closeCode(t *testing.T, c *websocket.Conn) int {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(testkit.Timeout))
	for {
		_, _, err := c.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return ce.Code
		}
		t.Fatalf("read ended without a close frame: %v", err)
	}
}

// echoes sends msg on c and fails the test unless the app echoes it.
func echoes(t testing.TB, c *websocket.Conn, msg string) {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatalf("write %q: %v", msg, err)
	}
	c.SetReadDeadline(time.Now().Add(testkit.Timeout))
	if _, got, err := c.ReadMessage(); err != nil || string(got) != msg {
		t.Fatalf("echo of %q: %q, %v", msg, got, err)
	}
}

func TestWebSocketEchoAndCloseCodes(t *testing.T) {
	h := newHarness(t, harnessOpts{modify: func(o *Options) { o.WSMaxMessageBytes = 64 << 10 }})
	h.addUser("alice", "node-a")
	hdr := func() http.Header { return http.Header{"Cookie": {cookie(h.session("alice"))}} }

	c, resp, err := h.dialWS("node-a", "/u/alice/api/ws", hdr())
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	if sc := resp.Header.Values("Set-Cookie"); len(sc) != 0 {
		t.Errorf("upgrade response sets %q", sc)
	}
	for _, m := range []struct {
		typ  int
		data []byte
	}{{websocket.TextMessage, []byte("hello")}, {websocket.BinaryMessage, []byte{0, 1, 2, 255}}, {websocket.TextMessage, bytes.Repeat([]byte("x"), 40<<10)}} {
		if err := c.WriteMessage(m.typ, m.data); err != nil {
			t.Fatal(err)
		}
		typ, got, err := c.ReadMessage()
		if err != nil || typ != m.typ || !bytes.Equal(got, m.data) {
			t.Fatalf("echo of %d bytes type %d: got %d bytes type %d, %v", len(m.data), m.typ, len(got), typ, err)
		}
	}
	pong := make(chan string, 1)
	c.SetPongHandler(func(s string) error { pong <- s; return nil })
	c.WriteControl(websocket.PingMessage, []byte("are you there"), time.Now().Add(testkit.Timeout))
	go c.ReadMessage() // control frames are handled while reading
	if s := testkit.Receive(t, "a pong through the bridge", pong); s != "are you there" {
		t.Errorf("pong %q", s)
	}
	c.Close()

	// The app closes with the code the client asks for.
	for _, code := range []int{1000, 1001, 1008, 1011, 4000, 4999} {
		c, _, err := h.dialWS("node-a", "/u/alice/api/ws", hdr())
		if err != nil {
			t.Fatal(err)
		}
		c.WriteMessage(websocket.TextMessage, []byte("close:"+itoa(code)))
		if got := closeCode(t, c); got != code {
			t.Errorf("app closed with %d, client saw %d", code, got)
		}
	}

	// The client closes: its code reaches the app, whose echo comes back.
	c2, _, err := h.dialWS("node-a", "/u/alice/api/ws", hdr())
	if err != nil {
		t.Fatal(err)
	}
	c2.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4123, "bye"), time.Now().Add(time.Second))
	if got := closeCode(t, c2); got != 4123 {
		t.Errorf("client closed with 4123, the app answered %d", got)
	}

	// A message from the app above WS_MAX_MESSAGE_BYTES closes with 1009.
	c3, _, err := h.dialWS("node-a", "/u/alice/api/ws", hdr())
	if err != nil {
		t.Fatal(err)
	}
	c3.WriteMessage(websocket.TextMessage, []byte("big:"+itoa(200<<10)))
	if got := closeCode(t, c3); got != websocket.CloseMessageTooBig {
		t.Errorf("oversized upstream message: close %d, want 1009", got)
	}
	testkit.Eventually(t, "bridges closed", func() bool { return h.nodes["node-a"].proxy.sockets.Len() == 0 })
	testkit.Eventually(t, "slots released", func() bool { return h.nodes["node-a"].proxy.inflight.count("alice") == 0 })
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestWebSocketRejections: failures after the upgrade surface as close
// codes, 4401 for authentication and 1011 for everything else.
func TestWebSocketRejections(t *testing.T) {
	h := newHarness(t, harnessOpts{modify: func(o *Options) { o.MaxInFlightPerUser = 1 }})
	alice := h.addUser("alice", "node-a")
	h.addUser("bob", "node-a")
	good := http.Header{"Cookie": {cookie(h.session("alice"))}}

	expect := func(name string, hdr http.Header, want int) {
		t.Helper()
		c, resp, err := h.dialWS("node-a", "/u/alice/api/ws", hdr)
		if err != nil {
			t.Fatalf("%s: dial: %v (%v)", name, err, resp)
		}
		if got := closeCode(t, c); got != want {
			t.Errorf("%s: close %d, want %d", name, got, want)
		}
	}
	expect("no session", nil, closeUnauthenticated)
	expect("bob's session", http.Header{"Cookie": {cookie(h.session("bob"))}}, closeUnauthenticated)

	open, _, err := h.dialWS("node-a", "/u/alice/api/ws", good.Clone())
	if err != nil {
		t.Fatal(err)
	}
	expect("over the in-flight cap", good.Clone(), websocket.CloseInternalServerErr)
	open.Close()
	testkit.Eventually(t, "slot released", func() bool { return h.nodes["node-a"].proxy.inflight.count("alice") == 0 })

	h.dir.edit("alice", func(e *informer.Entry) { e.Route.State = informer.StateSuspended })
	expect("suspended", good.Clone(), websocket.CloseInternalServerErr)
	testkit.Eventually(t, "slot released after the suspended refusal", func() bool { return h.nodes["node-a"].proxy.inflight.count("alice") == 0 })
	h.dir.edit("alice", func(e *informer.Entry) { e.Route.State = informer.StateStopped })
	expect("pod stopped", good.Clone(), websocket.CloseTryAgainLater)
	h.dir.edit("alice", func(e *informer.Entry) { e.Route.State = informer.StateReady })

	alice.stop()
	expect("app down", good.Clone(), websocket.CloseInternalServerErr)
	testkit.Eventually(t, "slots released after rejections", func() bool { return h.nodes["node-a"].proxy.inflight.count("alice") == 0 })
}
