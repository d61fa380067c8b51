package nodeproxy_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/sandgate/sandgate/internal/requestpath/nodeproxy"
	"github.com/sandgate/sandgate/internal/testing/sim/agentapp"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestE2EPlatform runs the must-show list of the node proxy issue on the
// real API server, the simulated two-node cluster and the auth API: users
// sign up through a node proxy and use their agent app through either
// node. The API server outage comes last.
func TestE2EPlatform(t *testing.T) {
	p := startPlatform(t)
	alice := p.signup(0, "alice")
	bob := p.signup(1, "bob")
	aliceCookie := map[string]string{"Cookie": cookie(alice.session)}

	t.Run("served through both nodes, hop from the other", func(t *testing.T) {
		home := p.podNode("alice")
		other := 1 - home
		otherBefore := handshakesOf(t, p.nodes[other].reg)
		hopsBefore := p.nodes[home].hopsIn(t, "authenticated")
		for _, i := range []int{home, other} {
			e := echoOf(t, p.get(i, "/u/alice/api/echo", aliceCookie))
			if e.Host != testHost || !strings.HasPrefix(e.Headers.Get("Cookie"), "dsh-auth-") {
				t.Errorf("via %s: Host %q Cookie %q", p.nodes[i].name, e.Host, e.Headers.Get("Cookie"))
			}
		}
		e := echoOf(t, p.get(other, "/u/alice/api/echo", map[string]string{"Authorization": "Bearer " + alice.bearer}))
		if e.Headers.Get("Authorization") != "" {
			t.Error("the bearer token reached the app")
		}
		// The launch token and the app's cookie stay on the pod's node:
		// the other node hops and never runs a handshake for alice.
		if n := p.nodes[home].hopsIn(t, "authenticated") - hopsBefore; n != 2 {
			t.Errorf("%s authenticated %v hops, want 2", p.nodes[home].name, n)
		}
		if n := handshakesOf(t, p.nodes[other].reg) - otherBefore; n != 0 {
			t.Errorf("%s (not the pod's node) did %v handshakes for alice", p.nodes[other].name, n)
		}
		for _, l := range accessLines(t, p.logs) {
			if l["user"] == "alice" && l["process"] == p.nodes[other].name && l["upstream"] == upstreamPod {
				t.Errorf("%s reached alice's pod directly: %v", p.nodes[other].name, l)
			}
		}
	})

	t.Run("another user's path refused, nothing upstream", func(t *testing.T) {
		before := len(p.appRequests("bob"))
		for i := range p.nodes {
			for _, hdr := range []map[string]string{aliceCookie, {"Authorization": "Bearer " + alice.bearer}} {
				resp := p.get(i, "/u/bob/api/echo", hdr)
				readAll(t, resp)
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("alice's credential on bob's path via %s: %d", p.nodes[i].name, resp.StatusCode)
				}
			}
		}
		if got := p.appRequests("bob"); len(got) != before {
			t.Errorf("bob's app received %v", got[before:])
		}
	})

	t.Run("traversal never reaches another user", func(t *testing.T) {
		before := len(p.appRequests("bob"))
		for _, target := range []string{"/u/alice/../bob/api/echo", "/u/alice/%2e%2e/bob/api/echo", "/u/alice/%2E%2e/bob/api/echo",
			"/u/alice%2f..%2fbob/api/echo", "/u/alice/..%2fbob/api/echo", "/u/alice//bob/api/echo", "/u//bob/api/echo",
			"/u/alice\\..\\bob/api/echo", "/u/alice/..%5cbob/api/echo", "/u/alice/..;/bob/api/echo"} {
			for i := range p.nodes {
				status := rawStatus(t, p.nodes[i].addr, "GET "+target+" HTTP/1.1\r\nHost: "+testHost+"\r\nCookie: "+cookie(alice.session)+"\r\nConnection: close\r\n\r\n")
				if !strings.Contains(status, " 400 ") && !strings.Contains(status, " 404 ") {
					t.Errorf("GET %s via %s: %q", target, p.nodes[i].name, status)
				}
			}
		}
		if got := p.appRequests("bob"); len(got) != before {
			t.Errorf("bob's app received %v", got[before:])
		}
	})

	t.Run("launch token and app cookie never reach the browser", func(t *testing.T) {
		tokens := p.launchTokens("alice")
		if len(tokens) == 0 {
			t.Fatal("no launch token in alice's pod logs")
		}
		for i := range p.nodes {
			for _, path := range []string{"/u/alice/", "/u/alice/assets/app.js", "/u/alice/api/messages", "/u/alice/favicon.svg", "/u/alice/?token=" + tokens[0]} {
				resp := p.get(i, path, aliceCookie)
				var seen strings.Builder
				for name, values := range resp.Header {
					seen.WriteString(name + ": " + strings.Join(values, ",") + "\n")
				}
				seen.WriteString(readAll(t, resp))
				for _, tok := range tokens {
					if strings.Contains(seen.String(), tok) {
						t.Errorf("GET %s via %s: the response carries a launch token", path, p.nodes[i].name)
					}
				}
				if strings.Contains(seen.String(), "dsh-auth-") {
					t.Errorf("GET %s via %s: the response carries the app's cookie", path, p.nodes[i].name)
				}
			}
		}
		logs := p.logs.String()
		for _, tok := range tokens {
			if strings.Contains(logs, tok) {
				t.Error("a log line of the platform carries a launch token")
			}
		}
		if strings.Contains(logs, "dsh-auth-") {
			t.Error("a log line of the platform names the app's cookie")
		}
	})

	t.Run("forged identity headers never reach the app", func(t *testing.T) {
		for i := range p.nodes {
			hdr := map[string]string{"Cookie": cookie(bob.session) + "; x=1", "X-Forwarded-User": "alice", "X-Forwarded-Email": "a@x",
				"X-Auth-Request-User": "alice", "X-Auth-Request-Groups": "admin", "Forwarded": "for=1.1.1.1", "X-Forwarded-For": "1.1.1.1",
				"X-Real-Ip": "1.1.1.1", "Authorization": "Basic Ym9iOng=", "X-Sandgate-Trace": "1"}
			e := echoOf(t, p.get(i, "/u/bob/api/echo", hdr))
			for name := range e.Headers {
				l := strings.ToLower(name)
				if l == "forwarded" || l == "x-real-ip" || l == "authorization" || strings.HasPrefix(l, "x-auth-request-") ||
					l == "x-forwarded-user" || l == "x-forwarded-email" || strings.HasPrefix(l, "x-sandgate-") {
					t.Errorf("via %s the app saw %s: %q", p.nodes[i].name, name, e.Headers[name])
				}
			}
			if xff := e.Headers.Get("X-Forwarded-For"); strings.Contains(xff, "1.1.1.1") {
				t.Errorf("forged X-Forwarded-For kept: %q", xff)
			}
		}
	})

	t.Run("SSE events stream through both nodes", func(t *testing.T) {
		for i := range p.nodes {
			worst := sseWorst(t, p.get(i, "/u/alice/api/events", aliceCookie), 6)
			t.Logf("via %s: worst delay %v", p.nodes[i].name, worst)
		}
	})

	t.Run("WebSocket echo and close codes", func(t *testing.T) {
		for i := range p.nodes {
			d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
			hdr := http.Header{"Cookie": {cookie(alice.session)}, "Host": {testHost}, "Origin": {"http://" + testHost}}
			c, _, err := d.DialContext(context.Background(), "ws://"+p.nodes[i].addr+"/u/alice/api/ws", hdr)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []struct {
				typ  int
				data string
			}{{websocket.TextMessage, "hi"}, {websocket.BinaryMessage, "\x00\x01\xff"}} {
				c.WriteMessage(m.typ, []byte(m.data))
				typ, got, err := c.ReadMessage()
				if err != nil || typ != m.typ || string(got) != m.data {
					t.Errorf("echo via %s: %d %q %v", p.nodes[i].name, typ, got, err)
				}
			}
			c.WriteMessage(websocket.TextMessage, []byte("close:4005"))
			if got := closeCode(t, c); got != 4005 {
				t.Errorf("close via %s: %d", p.nodes[i].name, got)
			}
			c.Close()
			anon, _, err := d.DialContext(context.Background(), "ws://"+p.nodes[i].addr+"/u/alice/api/ws", http.Header{"Host": {testHost}})
			if err != nil {
				t.Fatal(err)
			}
			if got := closeCode(t, anon); got != closeUnauthenticated {
				t.Errorf("anonymous WebSocket via %s: close %d", p.nodes[i].name, got)
			}
			anon.Close()
		}
	})

	t.Run("no API request while serving 1000 requests", func(t *testing.T) {
		before := p.requests.Load()
		for n := range 1000 {
			resp := p.get(n%2, "/u/alice/api/echo", aliceCookie)
			readAll(t, resp)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("request %d: %d", n, resp.StatusCode)
			}
		}
		if n := p.requests.Load() - before; n != 0 {
			t.Errorf("the node proxies made %d API requests while serving", n)
		}
	})

	t.Run("logout is seen by every node", func(t *testing.T) {
		carol := p.signup(0, "carol")
		req, _ := http.NewRequest(http.MethodPost, "http://"+p.nodes[1].addr+"/logout", nil)
		req.Host = testHost
		req.Header.Set("Cookie", cookie(carol.session))
		req.Header.Set("Origin", "http://"+testHost)
		resp, err := e2eClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if resp.StatusCode >= 400 {
			t.Fatalf("logout: %d", resp.StatusCode)
		}
		start := time.Now()
		for i := range p.nodes {
			testkit.Eventually(t, "logout on "+p.nodes[i].name, func() bool {
				resp := p.get(i, "/u/carol/api/echo", map[string]string{"Cookie": cookie(carol.session)})
				readAll(t, resp)
				return resp.StatusCode == http.StatusUnauthorized
			})
		}
		t.Logf("revoked on every node after %v", time.Since(start))
	})

	t.Run("API server stopped for 30s, existing users still served", func(t *testing.T) {
		if err := p.cp.StopAPIServer(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := p.cp.StartAPIServer(context.Background()); err != nil {
				t.Fatalf("restart API server: %v", err)
			}
		}()
		end := time.Now().Add(30 * time.Second)
		served, rounds := 0, 0
		for time.Now().Before(end) {
			// Each round follows another failed attempt of the node
			// proxies' informers to reach the API server.
			tried := p.requests.Load()
			testkit.Eventually(t, "an informer retrying the stopped API server", func() bool { return p.requests.Load() > tried })
			rounds++
			for i := range p.nodes {
				for _, a := range []e2eAccount{alice, bob} {
					resp := p.get(i, "/u/"+a.user+"/api/echo", map[string]string{"Cookie": cookie(a.session)})
					readAll(t, resp)
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("during the outage %s via %s: %d", a.user, p.nodes[i].name, resp.StatusCode)
					}
					served++
				}
			}
		}
		t.Logf("served %d requests in %d rounds, each after an informer retry, during the 30s outage", served, rounds)
	})
}

// echoOf decodes an /api/echo reply.
func echoOf(t *testing.T, resp *http.Response) agentapp.Echo { t.Helper(); return echo(t, resp) }

// sseWorst reads n events, checks that they arrive in order, and returns
// the largest delay between an event's send time and its arrival (logged:
// TestSSEPerEvent shows that no event waits for the next).
func sseWorst(t *testing.T, resp *http.Response, n int) time.Duration {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("event stream: %d", resp.StatusCode)
	}
	r := bufio.NewReader(resp.Body)
	var worst time.Duration
	for seq := int64(1); seq <= int64(n); seq++ {
		ev, arrived, err := nodeproxy.ReadEvent(r)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Seq != seq {
			t.Fatalf("event %d arrived as number %d", ev.Seq, seq)
		}
		worst = max(worst, arrived.Sub(ev.Sent))
	}
	return worst
}
