package nodeproxy

import (
	"net"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/connlimit"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// getRoot sends GET / on c and returns the answer's status line.
func getRoot(c net.Conn) string {
	return statusLine(c, "GET / HTTP/1.1\r\nHost: "+testHost+"\r\n\r\n")
}

// TestConnectionsBoundedPerClient: past its share of open connections an
// address is refused at once, while another address is served.
func TestConnectionsBoundedPerClient(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	p := h.nodes["node-a"].proxy
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := newListener(ln, p.opts.WriteTimeout)
	lim.limit = connlimit.New(connlimit.Options{Max: 3})
	srv := p.newServer()
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(lim) }()
	t.Cleanup(func() { srv.Shutdown(); lim.closeAll(); <-done })

	dial := func(from string) net.Conn { return dialFrom(t, ln.Addr().String(), from) }
	var held []net.Conn
	for i := range 3 {
		c := dial("127.0.0.1")
		if got := getRoot(c); !strings.Contains(got, " 200 ") {
			t.Fatalf("connection %d within the bound: %q", i, got)
		}
		held = append(held, c)
	}
	if got := getRoot(dial("127.0.0.1")); got != "" {
		t.Errorf("connection past the bound was served: %q", got)
	}
	if got := getRoot(dial("127.0.0.2")); !strings.Contains(got, " 200 ") {
		t.Errorf("another address: %q, want 200", got)
	}
	held[0].Close()
	testkit.Eventually(t, "a closed connection frees its slot", func() bool {
		return strings.Contains(getRoot(dial("127.0.0.1")), " 200 ")
	})
}

// TestServeBoundsConnectionsPerClient: the proxy's own listeners apply
// the bound: one address holding maxConnsPerClient connections gets no
// more, while another address is served.
func TestServeBoundsConnectionsPerClient(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	addr := h.nodes["node-a"].addr
	dial := func(from string) net.Conn { return dialFrom(t, addr, from) }
	for range maxConnsPerClient {
		dial("127.0.0.9")
	}
	if got := getRoot(dial("127.0.0.9")); got != "" {
		t.Errorf("connection past the bound was served: %q", got)
	}
	if got := getRoot(dial("127.0.0.10")); !strings.Contains(got, " 200 ") {
		t.Errorf("another address: %q, want 200", got)
	}
}
