//go:build linux

package nodeproxy

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"

	"github.com/fasthttp/websocket"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// smallBuffers keeps a socket's kernel buffers small, so that a peer that
// does not read stalls the writer after a few KiB.
func smallBuffers(_, _ string, rc syscall.RawConn) error {
	var err error
	rc.Control(func(fd uintptr) {
		if err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10); err == nil {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUF, 4<<10)
		}
	})
	return err
}

// stoppingProxy is harness.stoppingProxy on sockets with small buffers,
// and the address it serves on.
func stoppingProxy(t *testing.T, e *appEnv, modify func(*Options)) (p *Proxy, addr string, cancel func(), done <-chan error) {
	t.Helper()
	lc := net.ListenConfig{Control: smallBuffers}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p, cancel, done = e.h.stoppingProxy(ln, modify)
	return p, ln.Addr().String(), cancel, done
}

// TestWebSocketDrainStalledClients: WebSockets whose clients have stopped
// reading do not hold up the shutdown one after the other, each for as
// long as its close frame may wait: with 32 of them the proxy still stops
// within the test's patience.
func TestWebSocketDrainStalledClients(t *testing.T) {
	const sockets = 32
	e := newAppEnv(t, false, nil)
	flooding := make(chan struct{}, sockets)
	e.routeTo("alice", serveWSApp(t, func(c *websocket.Conn) {
		msg := bytes.Repeat([]byte("f"), 16<<10)
		for i := 0; c.WriteMessage(websocket.BinaryMessage, msg) == nil; i++ {
			if i == 4 {
				flooding <- struct{}{}
			}
		}
	}))
	p, addr, cancel, done := stoppingProxy(t, e, func(o *Options) { o.MaxInFlightPerUser = 2 * sockets })
	d := websocket.Dialer{NetDialContext: (&net.Dialer{Control: smallBuffers}).DialContext}
	hdr := http.Header{"Cookie": {cookie(e.h.session("alice"))}, "Host": {testHost}, "Origin": {"http://" + testHost}}
	for range sockets {
		c, resp, err := d.Dial("ws://"+addr+"/u/alice/ws", hdr)
		if err != nil {
			t.Fatalf("dial: %v (%v)", err, resp)
		}
		defer c.Close() // and never read
		testkit.Receive(t, "the app flooding the socket", flooding)
	}
	cancel()
	if err := testkit.Receive(t, "Serve's return", done); err != nil {
		t.Errorf("Serve: %v", err)
	}
	if n := p.sockets.Len(); n != 0 {
		t.Errorf("%d bridges open after Serve returned", n)
	}
}

// TestSSEStartedDuringDrain: an event stream whose response arrives after
// the shutdown has ended the open ones is ended too, not left to the drain
// deadline.
func TestSSEStartedDuringDrain(t *testing.T) {
	e := newAppEnv(t, false, nil)
	held := make(chan struct{}, 1)
	release := make(chan struct{})
	e.routeTo("alice", serveRaw(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		for l := line; l != "\r\n"; {
			if l, err = br.ReadString('\n'); err != nil {
				return
			}
		}
		if bytes.Contains([]byte(line), []byte("/held")) {
			held <- struct{}{}
			<-release
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndata:\n\r\n")
		io.Copy(io.Discard, c)
	}))
	// Past the test's patience: only the end of the stream stops it.
	_, addr, cancel, done := stoppingProxy(t, e, func(o *Options) { o.DrainTimeout = 2 * testkit.Timeout })
	open := func(path string) *bufio.Reader {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		io.WriteString(c, "GET /u/alice"+path+" HTTP/1.1\r\nHost: "+testHost+"\r\nCookie: "+cookie(e.h.session("alice"))+"\r\n\r\n")
		return bufio.NewReader(c)
	}
	ended := func(r *bufio.Reader) <-chan error {
		out := make(chan error, 1)
		go func() {
			_, err := io.Copy(io.Discard, r)
			out <- err
		}()
		return out
	}
	first := open("/events")
	if line, err := first.ReadString('\n'); err != nil || line != "HTTP/1.1 200 OK\r\n" {
		t.Fatalf("first stream: %q %v", line, err)
	}
	firstEnded := ended(first)
	late := open("/held")
	testkit.Receive(t, "the second stream's request at the app", held)
	cancel()
	testkit.Receive(t, "the first stream ended by the shutdown", firstEnded)
	close(release)
	testkit.Receive(t, "the stream started during the drain ended", ended(late))
	if err := testkit.Receive(t, "Serve's return", done); err != nil {
		t.Errorf("Serve: %v", err)
	}
}
