package nodeproxy

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// serveWSApp runs an app that hands every WebSocket to handle, which
// returns when done with it.
func serveWSApp(t *testing.T, handle func(*websocket.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := websocket.Upgrader{ReadBufferSize: 1024, WriteBufferSize: 1024, CheckOrigin: func(*http.Request) bool { return true }}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		handle(c)
	})}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return ln.Addr().String()
}

// TestWebSocketTruncatedMessage: an app that dies in the middle of a
// message gets the browser the close, never the part sent as a complete
// message.
func TestWebSocketTruncatedMessage(t *testing.T) {
	e := newAppEnv(t, false, nil)
	e.routeTo("alice", serveWSApp(t, func(c *websocket.Conn) {
		w, err := c.NextWriter(websocket.TextMessage)
		if err != nil {
			return
		}
		w.Write(bytes.Repeat([]byte("a"), 20<<10)) // frames of 1 KiB go out
		c.NetConn().Close()                        // the rest never does
	}))
	c, resp, err := e.h.dialWS("node-a", "/u/alice/ws", http.Header{"Cookie": {cookie(e.h.session("alice"))}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	c.SetReadDeadline(time.Now().Add(testkit.Timeout))
	_, msg, err := c.ReadMessage()
	var ce *websocket.CloseError
	switch {
	case err == nil:
		t.Fatalf("a message cut short arrived as a complete one of %d bytes", len(msg))
	case !errors.As(err, &ce) || ce.Code != websocket.CloseInternalServerErr:
		t.Errorf("read: %v, want close 1011", err)
	}
}

// deadlineConn records the write deadline in force at each Write.
type deadlineConn struct {
	net.Conn
	mu       sync.Mutex
	deadline time.Time
	used     []time.Time
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c *deadlineConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.used = append(c.used, c.deadline)
	c.mu.Unlock()
	return c.Conn.Write(b)
}

func (c *deadlineConn) lastUsed() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used[len(c.used)-1]
}

// TestWebSocketWriteDeadlinePerFrame: each frame of a message the bridge
// passes on gets WriteTimeout from when its data arrived, not from when
// the message began, so a long message that keeps moving is not cut off.
func TestWebSocketWriteDeadlinePerFrame(t *testing.T) {
	const writeTimeout = time.Hour // the deadline the conn layer sets once stays put
	got := make(chan int, 1)       // bytes of the message received so far, then its length
	appAddr := serveWSApp(t, func(c *websocket.Conn) {
		_, r, err := c.NextReader()
		if err != nil {
			return
		}
		buf := make([]byte, 64<<10)
		n, half := 0, false
		for {
			k, err := r.Read(buf)
			n += k
			if !half && n >= 8<<10 {
				half = true
				got <- n
			}
			if err != nil {
				got <- n
				return
			}
		}
	})
	upstream := make(chan *deadlineConn, 1)
	e := newAppEnv(t, false, func(o *Options) {
		o.WriteTimeout = writeTimeout
		o.Dial = func(addr string) (net.Conn, error) {
			c, err := net.Dial("tcp", addr)
			if err != nil || addr != appAddr {
				return c, err
			}
			dc := &deadlineConn{Conn: c}
			upstream <- dc
			return dc, nil
		}
	})
	e.routeTo("alice", appAddr)
	d := websocket.Dialer{WriteBufferSize: 1024}
	hdr := http.Header{"Cookie": {cookie(e.h.session("alice"))}, "Host": {testHost}, "Origin": {"http://" + testHost}}
	c, resp, err := d.Dial("ws://"+e.h.nodes["node-a"].addr+"/u/alice/ws", hdr)
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	defer c.Close()
	dc := testkit.Receive(t, "the bridge's dial of the app", upstream)
	w, err := c.NextWriter(websocket.BinaryMessage)
	if err != nil {
		t.Fatal(err)
	}
	part := bytes.Repeat([]byte("x"), 16<<10)
	w.Write(part)
	testkit.Receive(t, "the first part at the app", got)
	second := time.Now()
	w.Write(part)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n := testkit.Receive(t, "the whole message at the app", got); n != 2*len(part) {
		t.Fatalf("the app got %d bytes, want %d", n, 2*len(part))
	}
	if last, want := dc.lastUsed(), second.Add(writeTimeout); last.Before(want) {
		t.Errorf("the final frame's write deadline %v is earlier than WriteTimeout after its data was sent (%v)", last, want)
	}
}

// TestWebSocketStalledClientDropped: a client that stops reading is
// dropped once a write to it times out, though it keeps its connection
// open and quiet, and the bridge ends.
func TestWebSocketStalledClientDropped(t *testing.T) {
	e := newAppEnv(t, false, func(o *Options) { o.WriteTimeout = 100 * time.Millisecond })
	e.routeTo("alice", serveWSApp(t, func(c *websocket.Conn) {
		msg := bytes.Repeat([]byte("f"), 64<<10)
		for c.WriteMessage(websocket.BinaryMessage, msg) == nil {
		}
	}))
	p := e.h.nodes["node-a"].proxy
	if _, resp, err := e.h.dialWS("node-a", "/u/alice/ws", http.Header{"Cookie": {cookie(e.h.session("alice"))}}); err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	// The request's slot is held from before the upgrade until the bridge
	// has ended.
	testkit.Eventually(t, "the bridge ended", func() bool { return p.inflight.count("alice") == 0 })
}
