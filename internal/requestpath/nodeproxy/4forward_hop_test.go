package nodeproxy

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestCrossNodeHop: a request for a pod on node-b that lands on node-a is
// forwarded once; node-b re-verifies the credentials, does the handshake
// and talks to the pod. node-a never reads a launch token or holds the
// app's cookie.
func TestCrossNodeHop(t *testing.T) {
	h := newHarness(t, harnessOpts{peers: true})
	carol := h.addUser("carol", "node-b")
	a, b := h.nodes["node-a"], h.nodes["node-b"]

	for name, hdr := range map[string]map[string]string{
		"cookie": {"Cookie": cookie(h.session("carol"))},
		"bearer": {"Authorization": "Bearer tok-carol"},
	} {
		t.Run(name, func(t *testing.T) {
			e := echo(t, h.get("node-a", "/u/carol/api/echo?q=1", hdr))
			if e.Host != testHost || e.RequestURI != "/api/echo?q=1" {
				t.Errorf("app saw Host %q URI %q", e.Host, e.RequestURI)
			}
			if c := e.Headers.Get("Cookie"); !strings.HasPrefix(c, "dsh-auth-") || strings.Contains(c, DefaultCookieName) {
				t.Errorf("app saw Cookie %q", c)
			}
			for _, name := range []string{"Authorization", "X-Sandgate-Hop"} {
				if v := e.Headers.Get(name); v != "" {
					t.Errorf("app saw %s %q", name, v)
				}
			}
		})
	}
	if n := testutil.ToFloat64(b.proxy.m.hops.WithLabelValues("in", "authenticated")); n != 2 {
		t.Errorf("node-b received %v hops, want 2", n)
	}
	if n := testutil.ToFloat64(a.proxy.m.hops.WithLabelValues("out", "sent")); n != 2 {
		t.Errorf("node-a sent %v hops, want 2", n)
	}
	if got := handshakes(t, a); got != 0 {
		t.Errorf("node-a did %v handshakes, want 0", got)
	}
	if got := handshakes(t, b); got != 1 {
		t.Errorf("node-b did %v handshakes, want 1", got)
	}

	// The hop header grants nothing: node-b checks credentials itself.
	for name, hdr := range map[string]map[string]string{
		"no credential":  {hopHeader: "node-a"},
		"other's cookie": {hopHeader: "node-a", "Cookie": cookie(h.session("dave"))},
	} {
		resp := h.get("node-b", "/u/carol/api/echo", hdr)
		readAll(t, resp)
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("forged hop with %s: %d, want 401", name, resp.StatusCode)
		}
	}

	// The loop guard: a request already marked as a hop is never
	// forwarded again.
	before := len(carol.log.requests())
	resp := h.get("node-a", "/u/carol/api/echo", map[string]string{"Cookie": cookie(h.session("carol")), hopHeader: "node-z"})
	readAll(t, resp)
	if resp.StatusCode != http.StatusServiceUnavailable || len(carol.log.requests()) != before {
		t.Errorf("second hop: status %d, app requests %d -> %d", resp.StatusCode, before, len(carol.log.requests()))
	}

	// WebSockets hop too, close codes included.
	c, _, err := h.dialWS("node-a", "/u/carol/api/ws", http.Header{"Cookie": {cookie(h.session("carol"))}})
	if err != nil {
		t.Fatal(err)
	}
	echoes(t, c, "through the hop to node-b")
	c.WriteMessage(websocket.TextMessage, []byte("close:4321"))
	if got := closeCode(t, c); got != 4321 {
		t.Errorf("close through the hop: %d", got)
	}
	c2, _, err := h.dialWS("node-a", "/u/carol/api/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := closeCode(t, c2); got != closeUnauthenticated {
		t.Errorf("unauthenticated WebSocket via node-a: close %d", got)
	}
}

// handshakes sums a node's handshake counter.
func handshakes(t *testing.T, n *node) float64 {
	t.Helper()
	return handshakesOf(t, n.reg)
}

// handshakesOf sums the handshake counter in a registry.
func handshakesOf(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	n, _ := testkit.Gathered(t, reg, "sandgate_handshake_total", nil)
	return n
}

// TestHopToADownPeer: when the node proxy of the pod's node takes no
// connection (it is restarting in a rollout), the request never reached
// it: 503 with Retry-After, which the client may retry, not a 502.
func TestHopToADownPeer(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.addUser("carol", "node-a")
	e, err := h.dir.Lookup("carol")
	if err != nil {
		t.Fatal(err)
	}
	e.Route.Node, e.Route.NodeIP = "node-b", nodeIPs["node-b"] // nothing listens there
	h.dir.set("carol", e)
	resp := h.get("node-a", "/u/carol/api/echo", map[string]string{"Cookie": cookie(h.session("carol"))})
	readAll(t, resp)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("hop to a down peer: %d, Retry-After %q; want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
}

// TestHopFollowsAMovedSandbox: a wake raced a suspend. node-a's caches
// still see the sandbox Ready on node-b, where its old pod was; node-b
// sees it gone, holds the hop, and sees the new pod start on node-a. It
// answers movedHeader, and node-a sends a request without a body once more,
// where its caches now see the sandbox: served, one wake call, the app
// asked once. A request with a body is not sent twice: its 503 goes to the
// client, without the proxies' header.
func TestHopFollowsAMovedSandbox(t *testing.T) {
	h := newHarness(t, harnessOpts{peers: true, modify: wakeOpts(10*time.Second, nil).modify})
	carol := h.addUser("carol", "node-a")
	onA, _ := h.dir.Lookup("carol")
	onB := onA
	onB.Route.Node, onB.Route.NodeIP, onB.Route.Pod = "node-b", nodeIPs["node-b"], informer.Pod{}
	h.auth.setOnWake(func(string) { h.dir.set("carol", onA) })
	raced := func() {
		h.dir.edit("carol", func(e *informer.Entry) {
			e.Route = informer.Route{State: informer.StatePending, Sandbox: onA.Route.Sandbox}
		})
		h.dir.pin("node-a", "carol", onB)
	}
	hdr := map[string]string{"Cookie": cookie(h.session("carol"))}

	raced()
	resp := h.get("node-a", "/u/carol/api/echo", hdr)
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusOK || resp.Header.Get(movedHeader) != "" {
		t.Fatalf("GET after the race: %d %s, %s %q", resp.StatusCode, body, movedHeader, resp.Header.Get(movedHeader))
	}
	if got := h.auth.wakes.Load(); got != 1 {
		t.Errorf("%d wake calls, want 1", got)
	}
	asked := func() int {
		return len(slices.DeleteFunc(carol.log.requests(), func(p string) bool { return p != "/api/echo" }))
	}
	if got := asked(); got != 1 {
		t.Errorf("the app was asked %d times, want 1: %q", got, carol.log.requests())
	}

	raced()
	resp = h.do(http.MethodPost, "node-a", "/u/carol/api/echo", strings.NewReader("once"), hdr)
	readAll(t, resp)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || resp.Header.Get(movedHeader) != "" {
		t.Errorf("POST after the race: %d, Retry-After %q, %s %q", resp.StatusCode, resp.Header.Get("Retry-After"), movedHeader, resp.Header.Get(movedHeader))
	}
	if got := asked(); got != 1 {
		t.Errorf("the app was asked %d times after the POST, want still 1", got)
	}
}
