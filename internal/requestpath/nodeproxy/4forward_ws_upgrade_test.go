package nodeproxy

import (
	"bufio"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// serveRaw runs handle on every connection to a new local listener and
// returns its address; listener and connections close when the test ends.
func serveRaw(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { handle(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// routeTo makes user's pod the app at addr.
func (e *appEnv) routeTo(user, addr string) {
	e.h.dir.edit(user, func(en *informer.Entry) { en.Route.Pod.Addr = addr })
}

// TestUpstreamSwitchingProtocolsRefused: an app answering 101 to a request
// the proxy did not upgrade gets the client a 502, not a connection its
// front proxy would take for a tunnel; the client's Upgrade never reached
// the app.
func TestUpstreamSwitchingProtocolsRefused(t *testing.T) {
	inRoutingModes(t, func(t *testing.T, e *appEnv) {
		heads := make(chan string, 1)
		e.routeTo("alice", serveRaw(t, func(c net.Conn) {
			br := bufio.NewReader(c)
			var head strings.Builder
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				if line == "\r\n" {
					break
				}
				head.WriteString(line)
			}
			heads <- head.String()
			io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: foo\r\n\r\n")
			io.Copy(io.Discard, c)
		}))
		hdr, path := e.browser("alice", "/tunnel")
		raw := "GET " + path + " HTTP/1.1\r\nHost: " + hdr["Host"] + "\r\nCookie: " + hdr["Cookie"] +
			"\r\nConnection: upgrade\r\nUpgrade: foo\r\n\r\n"
		if got := e.h.rawRequest("node-a", raw); got != "HTTP/1.1 502 Bad Gateway" {
			t.Errorf("app's 101 to a plain request: client got %q, want 502", got)
		}
		head := strings.ToLower(testkit.Receive(t, "the request at the app", heads))
		for line := range strings.SplitSeq(head, "\r\n") {
			if strings.HasPrefix(line, "upgrade:") || strings.HasPrefix(line, "connection:") && strings.Contains(line, "upgrade") {
				t.Errorf("the client's %q reached the app", line)
			}
		}
	})
}
