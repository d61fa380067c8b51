package nodeproxy

import (
	"bufio"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// fakeTimers stands in for time.AfterFunc: timers fire when the test says.
type fakeTimers struct {
	mu      sync.Mutex
	pending map[*func()]time.Duration
	armed   chan time.Duration // every new timer's duration
}

func newFakeTimers() *fakeTimers {
	return &fakeTimers{pending: map[*func()]time.Duration{}, armed: make(chan time.Duration, 100)}
}

func (ft *fakeTimers) afterFunc(d time.Duration, f func()) func() bool {
	ft.mu.Lock()
	ft.pending[&f] = d
	ft.mu.Unlock()
	ft.armed <- d
	return func() bool {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		_, ok := ft.pending[&f]
		delete(ft.pending, &f)
		return ok
	}
}

// fire runs every pending timer now, as if its time had come.
func (ft *fakeTimers) fire() {
	ft.mu.Lock()
	var due []func()
	for f := range ft.pending {
		due = append(due, *f)
		delete(ft.pending, f)
	}
	ft.mu.Unlock()
	for _, f := range due {
		f()
	}
}

// sessionOf signs a session token for user with session id sid.
func (h *harness) sessionOf(user, sid string) string {
	h.t.Helper()
	tok, err := h.signer.Sign(jwt.Claims{User: user, SessionID: sid, Epoch: 1})
	if err != nil {
		h.t.Fatal(err)
	}
	return tok
}

// endedCount is node-a's count of connections closed because their
// session ended, by method.
func (h *harness) endedCount(method string) float64 {
	h.t.Helper()
	v, _ := testkit.Gathered(h.t, h.nodes["node-a"].reg, "sandgate_nodeproxy_auth_total", map[string]string{"method": method, "result": authEnded})
	return v
}

// openWS dials user's agent WebSocket through node-a with hdr and checks
// that it echoes.
func (h *harness) openWS(user string, hdr http.Header) *websocket.Conn {
	h.t.Helper()
	c, resp, err := h.dialWS("node-a", "/u/"+user+"/api/ws", hdr)
	if err != nil {
		h.t.Fatalf("dial %s: %v (%v)", user, err, resp)
	}
	echoes(h.t, c, "hello "+user)
	return c
}

// TestWebSocketEndsWithItsSession: an open WebSocket is closed with 4401
// (and its upstream side closed) as soon as the account change that ends
// its session reaches the directory, or at the session's maximum age;
// changes that leave the session valid, and other users' changes, leave
// it open.
func TestWebSocketEndsWithItsSession(t *testing.T) {
	timers := newFakeTimers()
	h := newHarness(t, harnessOpts{modify: func(o *Options) { o.afterFunc = timers.afterFunc }})
	users := []string{"alice", "bob", "carol", "dave", "erin", "frank", "grace"}
	for _, u := range users {
		h.addUser(u, "node-a")
	}
	withSession := func(user string) (*websocket.Conn, string) {
		t.Helper()
		sid := h.sessionID(user)
		return h.openWS(user, http.Header{"Cookie": {cookie(h.sessionOf(user, sid))}}), sid
	}
	expect4401 := func(what string, c *websocket.Conn) {
		t.Helper()
		if got := closeCode(t, c); got != closeUnauthenticated {
			t.Errorf("%s: close %d, want %d", what, got, closeUnauthenticated)
		}
	}

	// A claim update that leaves the session valid (another session
	// revoked, a route change) keeps the socket open.
	bob, _ := withSession("bob")
	other := h.sessionID("bob")
	h.dir.edit("bob", func(e *informer.Entry) {
		e.Account.Revoked = []account.Revoked{{SessionID: other, Expiry: time.Now().Add(time.Hour).Unix()}}
		e.Route.State = informer.StateSuspended
	})
	h.dir.edit("bob", func(e *informer.Entry) { e.Route.State = informer.StateReady })
	echoes(t, bob, "still open after bob's harmless changes")

	cases := []struct {
		name   string
		user   string
		bearer bool
		end    func(user, sid string)
	}{
		{"sign out everywhere (epoch raised)", "alice", false, func(u, _ string) {
			h.dir.edit(u, func(e *informer.Entry) { e.Account.Epoch++ })
		}},
		{"this session revoked (logout)", "carol", false, func(u, sid string) {
			h.dir.edit(u, func(e *informer.Entry) {
				e.Account.Revoked = []account.Revoked{{SessionID: sid, Expiry: time.Now().Add(time.Hour).Unix()}}
			})
		}},
		{"account deleted", "dave", false, func(u, _ string) { h.dir.remove(u) }},
		{"account recreated (new claim UID)", "erin", false, func(u, _ string) {
			h.dir.edit(u, func(e *informer.Entry) { e.Account.UID = "99999999-0000-4000-8000-000000000099" })
		}},
		{"bearer token rotated", "frank", true, func(u, _ string) {
			h.dir.edit(u, func(e *informer.Entry) { e.Account.TokenHash = account.HashToken("rotated-" + u) })
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method := methodCookie
			var c *websocket.Conn
			var sid string
			if tc.bearer {
				method = methodBearer
				c = h.openWS(tc.user, http.Header{"Authorization": {"Bearer tok-" + tc.user}})
			} else {
				c, sid = withSession(tc.user)
			}
			before := h.endedCount(method)
			tc.end(tc.user, sid)
			expect4401(tc.user+"'s socket", c)
			if n := h.endedCount(method) - before; n != 1 {
				t.Errorf("auth_total{method=%s,result=ended} rose by %v, want 1", method, n)
			}
			// The other user's socket is untouched.
			echoes(t, bob, "bob still open after "+tc.name)
		})
	}

	t.Run("maximum age", func(t *testing.T) {
		for len(timers.armed) > 0 {
			<-timers.armed
		}
		c, _ := withSession("grace")
		if d := testkit.Receive(t, "grace's maximum-age timer", timers.armed); d <= 0 || d > DefaultCookieMaxAge {
			t.Errorf("maximum-age timer of %v, want within COOKIE_MAX_AGE (%v)", d, DefaultCookieMaxAge)
		}
		// Early (the clock disagrees with the timer): re-armed, not closed.
		timers.fire()
		testkit.Receive(t, "the timer re-armed", timers.armed)
		echoes(t, c, "open before the maximum age")
		before := h.endedCount(methodCookie)
		h.clock.Advance(DefaultCookieMaxAge)
		timers.fire()
		expect4401("grace's socket at its maximum age", c)
		// bob's session is as old: its socket ends too.
		expect4401("bob's socket at its maximum age", bob)
		if n := h.endedCount(methodCookie) - before; n != 2 {
			t.Errorf("auth_total{method=cookie,result=ended} rose by %v, want 2", n)
		}
	})

	testkit.Eventually(t, "bridges closed", func() bool { return h.nodes["node-a"].proxy.sockets.Len() == 0 })
	testkit.Eventually(t, "timers stopped", func() bool {
		timers.mu.Lock()
		defer timers.mu.Unlock()
		return len(timers.pending) == 0
	})
}

// TestWebSocketHopEndsWithItsSession: a socket bridged through another
// node's proxy ends with 4401 too (both nodes watch the session).
func TestWebSocketHopEndsWithItsSession(t *testing.T) {
	h := newHarness(t, harnessOpts{peers: true})
	h.addUser("alice", "node-a")
	c, resp, err := h.dialWS("node-b", "/u/alice/api/ws", http.Header{"Cookie": {cookie(h.session("alice"))}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	echoes(t, c, "via node-b")
	h.dir.edit("alice", func(e *informer.Entry) { e.Account.Epoch++ })
	if got := closeCode(t, c); got != closeUnauthenticated {
		t.Errorf("close %d, want %d", got, closeUnauthenticated)
	}
}

// TestStreamEndsWithItsSession: an open event stream ends (its connection
// closes) when its session is revoked; another user's stays open.
func TestStreamEndsWithItsSession(t *testing.T) {
	h := newHarness(t, harnessOpts{appEvents: 20 * time.Millisecond})
	h.addUser("alice", "node-a")
	h.addUser("bob", "node-a")
	open := func(user string) *bufio.Reader {
		t.Helper()
		resp := h.get("node-a", "/u/"+user+"/api/events", map[string]string{"Cookie": cookie(h.session(user))})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s's events: %d", user, resp.StatusCode)
		}
		r := bufio.NewReader(resp.Body)
		if _, _, err := readEvent(r); err != nil {
			t.Fatalf("%s's first event: %v", user, err)
		}
		return r
	}
	alice, bob := open("alice"), open("bob")
	h.dir.edit("alice", func(e *informer.Entry) { e.Account.Epoch++ })
	ended := make(chan error, 1)
	go func() {
		for {
			if _, _, err := readEvent(alice); err != nil {
				ended <- err
				return
			}
		}
	}()
	if err := testkit.Receive(t, "alice's stream to end", ended); !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		t.Logf("alice's stream ended with %v", err)
	}
	if _, _, err := readEvent(bob); err != nil {
		t.Errorf("bob's stream after alice's change: %v", err)
	}
	if n := h.endedCount(methodCookie); n != 1 {
		t.Errorf("auth_total{method=cookie,result=ended} = %v, want 1", n)
	}
	testkit.Eventually(t, "alice's stream released", func() bool { return h.nodes["node-a"].proxy.streams.Len() == 1 })
}

// TestOpenConnectionsEndWhenTheKeysAreReplaced: after a signing key reset
// reaches the node proxy (its key sets replaced once more), every open
// WebSocket and stream of a session cookie verified before it ends with
// 4401; a bearer token's socket, which no signing key vouches for, and a
// cookie socket opened after the reset stay open.
func TestOpenConnectionsEndWhenTheKeysAreReplaced(t *testing.T) {
	var replaced atomic.Uint64
	h := newHarness(t, harnessOpts{appEvents: 20 * time.Millisecond, modify: func(o *Options) { o.KeySetsReplaced = replaced.Load }})
	for _, u := range []string{"alice", "bob", "carol"} {
		h.addUser(u, "node-a")
	}
	alice := h.openWS("alice", http.Header{"Cookie": {cookie(h.session("alice"))}})
	bob := h.openWS("bob", http.Header{"Authorization": {"Bearer tok-bob"}})
	resp := h.get("node-a", "/u/carol/api/events", map[string]string{"Cookie": cookie(h.session("carol"))})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("carol's events: %d", resp.StatusCode)
	}
	carol := bufio.NewReader(resp.Body)
	if _, _, err := readEvent(carol); err != nil {
		t.Fatalf("carol's first event: %v", err)
	}
	proxy := h.nodes["node-a"].proxy

	proxy.KeysReplaced()
	echoes(t, alice, "still open: the keys were not replaced")

	replaced.Add(1)
	proxy.KeysReplaced()
	if got := closeCode(t, alice); got != closeUnauthenticated {
		t.Errorf("alice's cookie socket after the reset: close %d, want %d", got, closeUnauthenticated)
	}
	for {
		if _, _, err := readEvent(carol); err != nil {
			break
		}
	}
	echoes(t, bob, "bob's bearer socket after the reset")
	after := h.openWS("alice", http.Header{"Cookie": {cookie(h.session("alice"))}})
	proxy.KeysReplaced()
	echoes(t, after, "a session verified after the reset")
	if n := h.endedCount(methodCookie); n != 2 {
		t.Errorf("auth_total{method=cookie,result=ended} = %v, want 2 (alice's socket, carol's stream)", n)
	}
	after.Close()
	bob.Close()
	testkit.Eventually(t, "every watch released", func() bool { return proxy.watch.watches.Len() == 0 })
}
