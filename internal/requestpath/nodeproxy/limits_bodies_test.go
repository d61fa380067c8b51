package nodeproxy

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/accountpath/authapi"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestAuthAPIBodyLimitIsTheAuthAPIs(t *testing.T) {
	if authAPIMaxBodyBytes != authapi.DefaultMaxBodyBytes {
		t.Errorf("auth API bodies capped at %d, the auth API's limit is %d", authAPIMaxBodyBytes, authapi.DefaultMaxBodyBytes)
	}
}

func TestBodyBudgetRules(t *testing.T) {
	a, b := netip.MustParsePrefix("192.0.2.1/32"), netip.MustParsePrefix("192.0.2.2/32")
	type step struct {
		release bool
		client  netip.Prefix
		n       int64
		ok      bool
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"a client's share", []step{{false, a, 60, true}, {false, a, 40, true}, {false, a, 1, false}, {false, b, 100, true}}},
		{"everyone's share", []step{{false, a, 100, true}, {false, b, 100, true}, {false, netip.MustParsePrefix("192.0.2.3/32"), 50, true}, {false, netip.MustParsePrefix("192.0.2.4/32"), 1, false}}},
		{"released bytes are free again", []step{{false, a, 100, true}, {true, a, 100, true}, {false, a, 100, true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bb := newBodyBudget(100, 250)
			for i, st := range tc.steps {
				if st.release {
					bb.release(st.client, st.n)
					continue
				}
				if err := bb.reserve(st.client, st.n); (err == nil) != st.ok {
					t.Fatalf("step %d: reserve %d for %s: %v, want ok=%v", i, st.n, st.client, err, st.ok)
				}
			}
		})
	}
}

// TestSlowAuthAPIBodyIsCutOff: a client that trickles a body to an auth API
// path is answered and dropped after HeaderTimeout, not BodyTimeout, and
// the auth API sees nothing.
func TestSlowAuthAPIBodyIsCutOff(t *testing.T) {
	h := newHarness(t, harnessOpts{modify: func(o *Options) {
		o.HeaderTimeout = 300 * time.Millisecond
		o.BodyTimeout = time.Hour
	}})
	c, err := net.Dial("tcp", h.nodes["node-a"].addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	io.WriteString(c, "POST /login HTTP/1.1\r\nHost: "+testHost+
		"\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n\r\nuser=al")
	status, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("no answer to a stalled auth API body: %v", err)
	}
	if !strings.Contains(status, " 499 ") {
		t.Errorf("stalled auth API body: %q, want 499", status)
	}
	if got := h.auth.seen.Last(); got.Path != "" {
		t.Errorf("the auth API saw %s %s", got.Method, got.Path)
	}
	if n := h.nodes["node-a"].proxy.inflight.bodies.buffered(); n != 0 {
		t.Errorf("%d body bytes still reserved", n)
	}
}

// TestAuthAPIBodiesBoundedPerClient: one address holding its share of
// auth API bodies gets 503 for the next, while another address is served.
func TestAuthAPIBodiesBoundedPerClient(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	p := h.nodes["node-a"].proxy
	addr := h.nodes["node-a"].addr
	open := func(from string) net.Conn { return dialFrom(t, addr, from) }
	stalled := authAPIClientBytes / authAPIMaxBodyBytes
	for range stalled {
		c := open("127.0.0.1")
		io.WriteString(c, "POST /users HTTP/1.1\r\nHost: "+testHost+
			"\r\nContent-Type: application/json\r\nContent-Length: 1048576\r\n\r\n{")
	}
	testkit.Eventually(t, "the stalled bodies reserved", func() bool { return p.inflight.bodies.buffered() == authAPIClientBytes })
	post := "POST /users HTTP/1.1\r\nHost: " + testHost + "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"
	read := func(c net.Conn) string { return statusLine(c, post) }
	if got := read(open("127.0.0.1")); !strings.Contains(got, " 503 ") {
		t.Errorf("one more body from the same address: %q, want 503", got)
	}
	if got := read(open("127.0.0.2")); !strings.Contains(got, " 200 ") {
		t.Errorf("a body from another address: %q, want 200", got)
	}
}
