package agentapp

import (
	"bytes"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
)

// dialWS opens /api/ws with cookie (nil for none) and extra headers.
func dialWS(t *testing.T, ta *testApp, cookie *http.Cookie, header http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	if header == nil {
		header = http.Header{}
	}
	if cookie != nil {
		header.Set("Cookie", cookie.String())
	}
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	c, resp, err := d.DialContext(t.Context(), "ws://"+ta.addr+"/api/ws", header)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if c != nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, resp, err
}

func mustDialWS(t *testing.T, ta *testApp, cookie *http.Cookie) *websocket.Conn {
	t.Helper()
	c, _, err := dialWS(t, ta, cookie, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	return c
}

func TestWebSocketRefusedWithoutCookie(t *testing.T) {
	ta := startApp(t, Defaults())
	_, resp, err := dialWS(t, ta, nil, nil)
	if !errors.Is(err, websocket.ErrBadHandshake) || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("dial without cookie: err %v, resp %v; want a 401 handshake failure", err, resp)
	}
	_, resp, err = dialWS(t, ta, ta.login(), http.Header{"Origin": {"http://evil.example"}})
	if !errors.Is(err, websocket.ErrBadHandshake) || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("dial from another origin: err %v, resp %v; want a 403 handshake failure", err, resp)
	}
}

func TestWebSocketEcho(t *testing.T) {
	ta := startApp(t, Defaults())
	c := mustDialWS(t, ta, ta.login())
	messages := []struct {
		typ  int
		data []byte
	}{
		{websocket.TextMessage, []byte("hello")},
		{websocket.TextMessage, []byte("héllo, 世界")},
		{websocket.TextMessage, []byte("")},
		{websocket.TextMessage, []byte("closed:not a command")},
		{websocket.BinaryMessage, []byte{0, 1, 2, 0xff, 0xfe}},
		{websocket.BinaryMessage, []byte("close:1000")}, // commands are text only
		{websocket.BinaryMessage, bytes.Repeat([]byte{7}, 1<<20)},
	}
	for _, m := range messages {
		if err := c.WriteMessage(m.typ, m.data); err != nil {
			t.Fatalf("write: %v", err)
		}
		typ, got, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if typ != m.typ || !bytes.Equal(got, m.data) {
			t.Fatalf("echo of type %d (%d bytes): got type %d (%d bytes)", m.typ, len(m.data), typ, len(got))
		}
	}
}

func TestWebSocketCloseCodes(t *testing.T) {
	ta := startApp(t, Defaults())
	cookie := ta.login()
	for _, code := range []int{1000, 1001, 1008, 1011, 3000, 4401, 4999} {
		c := mustDialWS(t, ta, cookie)
		if err := c.WriteMessage(websocket.TextMessage, []byte("close:"+strconv.Itoa(code))); err != nil {
			t.Fatal(err)
		}
		_, _, err := c.ReadMessage()
		var ce *websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != code {
			t.Errorf("close:%d: read error %v, want close code %d", code, err, code)
		}
	}
}

func TestWebSocketBadCommands(t *testing.T) {
	ta := startApp(t, Defaults())
	c := mustDialWS(t, ta, ta.login())
	for _, cmd := range []string{"close:", "close:abc", "close:999", "close:1005", "close:1006", "close:5000", "big:", "big:-1", "big:x", "big:999999999999"} {
		if err := c.WriteMessage(websocket.TextMessage, []byte(cmd)); err != nil {
			t.Fatal(err)
		}
		typ, got, err := c.ReadMessage()
		if err != nil || typ != websocket.TextMessage || !strings.HasPrefix(string(got), "error: ") {
			t.Errorf("%q: got type %d %q, err %v; want an error text", cmd, typ, got, err)
		}
	}
	// The socket is still usable.
	c.WriteMessage(websocket.TextMessage, []byte("still here"))
	if _, got, err := c.ReadMessage(); err != nil || string(got) != "still here" {
		t.Fatalf("echo after bad commands: %q, %v", got, err)
	}
}

func TestWebSocketBigMessage(t *testing.T) {
	ta := startApp(t, Defaults())
	c := mustDialWS(t, ta, ta.login())
	for _, n := range []int{0, 1, 27, 5 << 20} {
		if err := c.WriteMessage(websocket.TextMessage, []byte("big:"+strconv.Itoa(n))); err != nil {
			t.Fatal(err)
		}
		typ, got, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("big:%d: %v", n, err)
		}
		if typ != websocket.BinaryMessage || len(got) != n {
			t.Fatalf("big:%d: type %d, %d bytes", n, typ, len(got))
		}
		for i, b := range got {
			if b != 'a'+byte(i%26) {
				t.Fatalf("big:%d: byte %d is %q", n, i, b)
			}
		}
	}
}

func TestWebSocketTicks(t *testing.T) {
	opts := Defaults()
	opts.TickInterval = 30 * time.Millisecond
	ta := startApp(t, opts)
	c := mustDialWS(t, ta, ta.login())
	for _, want := range []string{"tick 1", "tick 2", "tick 3"} {
		typ, got, err := c.ReadMessage()
		if err != nil || typ != websocket.TextMessage || string(got) != want {
			t.Fatalf("got type %d %q, err %v; want %q", typ, got, err, want)
		}
	}
}

func TestWebSocketNoTicksWhenDisabled(t *testing.T) {
	opts := Defaults()
	opts.TickInterval = 0
	ta := startApp(t, opts)
	c := mustDialWS(t, ta, ta.login())
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, got, err := c.ReadMessage(); err == nil {
		t.Fatalf("got %q with ticks disabled", got)
	}
}

func TestWebSocketGoingAwayOnShutdown(t *testing.T) {
	ta := startApp(t, Defaults())
	c := mustDialWS(t, ta, ta.login())
	c.WriteMessage(websocket.TextMessage, []byte("ping"))
	if _, _, err := c.ReadMessage(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ta.stop() }()
	_, _, err := c.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseGoingAway {
		t.Errorf("read during shutdown: %v, want close 1001", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
}

func TestSendableCloseCode(t *testing.T) {
	for code, want := range map[int]bool{
		999: false, 1000: true, 1003: true, 1004: false, 1005: false, 1006: false,
		1007: true, 1014: true, 1015: false, 2999: false, 3000: true, 4999: true, 5000: false,
	} {
		if got := sendableCloseCode(code); got != want {
			t.Errorf("sendableCloseCode(%d) = %v, want %v", code, got, want)
		}
	}
}
