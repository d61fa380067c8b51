package connlimit

import (
	"net"
	"net/netip"
	"testing"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func tcp(ip string) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: 40000} }

func TestLimit(t *testing.T) {
	l := New(Options{Max: 2, Exempt: func(a netip.Addr) bool { return a == netip.MustParseAddr("10.0.0.9") }})
	var keys []netip.Prefix
	for i := range 2 {
		key, counted, ok := l.Acquire(tcp("10.0.0.1"))
		if !ok || !counted {
			t.Fatalf("connection %d within the bound refused", i)
		}
		keys = append(keys, key)
	}
	if _, _, ok := l.Acquire(tcp("::ffff:10.0.0.1")); ok {
		t.Error("a third connection (mapped address) was let through")
	}
	if _, counted, ok := l.Acquire(tcp("10.0.0.9")); !ok || counted {
		t.Error("an exempt address was counted or refused")
	}
	if _, counted, ok := l.Acquire(&net.UnixAddr{Name: "@x"}); !ok || counted {
		t.Error("a connection that is not TCP was counted or refused")
	}
	l.Release(keys[0])
	if _, _, ok := l.Acquire(tcp("10.0.0.1")); !ok {
		t.Error("a released place was not given back")
	}
}

// TestKeys: by default an IPv6 /64 is one client; Address counts each
// address on its own.
func TestKeys(t *testing.T) {
	byNet := New(Options{Max: 1})
	byAddr := New(Options{Max: 1, Key: Address})
	for _, ip := range []string{"fd00::1", "fd00::2"} {
		byNet.Acquire(tcp(ip))
		if _, _, ok := byAddr.Acquire(tcp(ip)); !ok {
			t.Errorf("%s refused when counted by address", ip)
		}
	}
	if n := byNet.open.Count(netip.MustParsePrefix("fd00::/64")); n != 1 {
		t.Errorf("fd00::/64 holds %d, want 1: its two addresses are one client of a share of 1", n)
	}
}

// TestListener: past its share a connection is closed on accept; closing
// a counted one, even twice, gives its place back once.
func TestListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := New(Options{Max: 1})
	ln := l.Listener(inner)
	t.Cleanup(func() { ln.Close() })
	dial := func() net.Conn {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dial()
	first, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	over := dial()
	if _, err := over.Read(make([]byte, 1)); err == nil {
		t.Error("the connection past the bound was not closed")
	}
	first.Close()
	first.Close()
	dial()
	second := testkit.Receive(t, "the next connection accepted", accepted)
	local := Address(netip.MustParseAddr("127.0.0.1"))
	if n := l.open.Count(local); n != 1 {
		t.Errorf("open = %d, want 1", n)
	}
	second.Close()
	if n := l.open.Count(local); n != 0 {
		t.Errorf("open after closing all = %d", n)
	}
}
