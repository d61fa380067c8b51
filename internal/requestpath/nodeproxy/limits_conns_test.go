package nodeproxy

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"

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

// recordedConn is a connection that records its writes and write
// deadlines.
type recordedConn struct {
	net.Conn
	writes    []int
	deadlines int
}

func (c *recordedConn) Write(b []byte) (int, error) {
	c.writes = append(c.writes, len(b))
	return len(b), nil
}

func (c *recordedConn) SetWriteDeadline(time.Time) error {
	c.deadlines++
	return nil
}

// TestStreamedBodyInLargeWrites: a streamed body leaves the server's
// 16 KiB buffered writer in writes of up to streamChunk, as it would on a
// bare TCP connection, each through Write and its write deadline.
func TestStreamedBodyInLargeWrites(t *testing.T) {
	rec := &recordedConn{}
	cc := &clientConn{Conn: rec, l: &listener{writeTimeout: time.Minute}}
	w := bufio.NewWriterSize(cc, 16<<10)
	head := "HTTP/1.1 200 OK\r\nContent-Length: 65536\r\n\r\n"
	w.WriteString(head)
	const size = 64 << 10
	if n, err := w.ReadFrom(io.LimitReader(bytes.NewReader(make([]byte, 2*size)), size)); n != size || err != nil {
		t.Fatalf("ReadFrom = %d, %v; want %d", n, err, size)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range rec.writes {
		total += n
		if n > max(streamChunk, 16<<10) {
			t.Errorf("a write of %d bytes, over %d", n, streamChunk)
		}
	}
	if total != len(head)+size {
		t.Errorf("wrote %d bytes, want %d", total, len(head)+size)
	}
	// The buffer's first 16 KiB, then the rest in 32 KiB writes.
	if want := 1 + (size-(16<<10-len(head))+streamChunk-1)/streamChunk; len(rec.writes) != want {
		t.Errorf("%d writes %v, want %d", len(rec.writes), rec.writes, want)
	}
	if rec.deadlines == 0 {
		t.Error("no write deadline set")
	}
}
