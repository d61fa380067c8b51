package egress

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestConnectionsCappedPerClient: one sandbox address opening 3,000
// connections holds at most the cap; those past it are closed at once,
// the proxy's heap stays bounded, and another sandbox is still served.
func TestConnectionsCappedPerClient(t *testing.T) {
	const (
		conns   = 3000
		wantCap = DefaultMaxConnsPerClient
		// bound on heap and stacks grown while the connections are held:
		// the test's own 3,000 sockets and the cap's served connections;
		// 3,000 served connections take several times more.
		bound = 24 << 20
	)
	e := newEnv(t, func(o *Options) { o.Default, o.CallsInFlight = Limits{}, conns })
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(aliceIP)}}
	held := make([]net.Conn, 0, conns)
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
	})
	for range conns {
		c, err := d.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		fmt.Fprint(c, "GET /openai/models HTTP/1.1\r\nHost: egress\r\n\r\n")
	}
	served := 0
	status := make([]byte, len("HTTP/1.1 200"))
	for i, c := range held {
		c.SetReadDeadline(time.Now().Add(testkit.Timeout))
		_, err := io.ReadFull(c, status)
		switch {
		case err == nil && string(status) == "HTTP/1.1 200":
			served++
		case errors.Is(err, os.ErrDeadlineExceeded):
			t.Fatalf("connection %d was neither served nor closed", i)
		case err == nil:
			t.Fatalf("connection %d answered %q", i, status)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if served != wantCap {
		t.Errorf("%d of %d connections from one address were served, want %d", served, conns, wantCap)
	}
	grown := int64(after.HeapAlloc+after.StackInuse) - int64(before.HeapAlloc+before.StackInuse)
	t.Logf("heap and stacks grew %d KiB holding %d connections", grown>>10, conns)
	if grown > bound {
		t.Errorf("heap and stacks grew %d MiB, want at most %d", grown>>20, bound>>20)
	}
	if status, _ := read(t, e.do(bobIP, "GET", "/openai/models", "")); status != 200 {
		t.Errorf("another sandbox = %d while alice is at her cap, want 200", status)
	}
}
