package nodeproxy_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
)

// TestE2EOpenSocketsEndWithTheSession: on the real API server with the
// shipped auth API and node proxies, an open agent WebSocket ends with
// 4401 as soon as the node proxy's claim informer sees the change that
// ends its session: sign out everywhere (cookie socket, on the pod's node
// and through a hop), token rotation (bearer socket), account deletion.
// Another user's socket stays open throughout.
func TestE2EOpenSocketsEndWithTheSession(t *testing.T) {
	p := startPlatform(t)
	alice := p.signup(0, "alice")
	bob := p.signup(1, "bob")
	home := p.podNode("alice")

	bobWS := p.dialWS(t, p.podNode("bob"), "bob", bob.session)
	echoes(t, bobWS, "bob opens")

	t.Run("sign out everywhere", func(t *testing.T) {
		local := p.dialWS(t, home, "alice", alice.session)
		hopped := p.dialWS(t, 1-home, "alice", alice.session)
		echoes(t, local, "alice on the pod's node")
		echoes(t, hopped, "alice through a hop")
		p.mutate(t, http.MethodPost, "/users/alice/logout", alice.bearer, http.StatusNoContent)
		for name, c := range map[string]*websocket.Conn{"on the pod's node": local, "through a hop": hopped} {
			if got := closeCode(t, c); got != closeUnauthenticated {
				t.Errorf("alice's socket %s: close %d, want %d", name, got, closeUnauthenticated)
			}
		}
		echoes(t, bobWS, "bob after alice signed out everywhere")
	})

	t.Run("token rotation ends a bearer socket", func(t *testing.T) {
		c := p.dialBearerWS(t, home, "alice", alice.bearer)
		echoes(t, c, "alice's API client")
		p.mutate(t, http.MethodPost, "/users/alice/token", alice.bearer, http.StatusOK)
		if got := closeCode(t, c); got != closeUnauthenticated {
			t.Errorf("bearer socket after rotation: close %d, want %d", got, closeUnauthenticated)
		}
		echoes(t, bobWS, "bob after alice's rotation")
	})

	t.Run("account deletion", func(t *testing.T) {
		c := p.dialBearerWS(t, p.podNode("bob"), "bob", bob.bearer)
		echoes(t, c, "bob's API client")
		p.mutate(t, http.MethodDelete, "/users/bob", bob.bearer, 0)
		for name, c := range map[string]*websocket.Conn{"cookie": bobWS, "bearer": c} {
			if got := closeCode(t, c); got != closeUnauthenticated {
				t.Errorf("bob's %s socket after deletion: close %d, want %d", name, got, closeUnauthenticated)
			}
		}
	})
}

// mutate sends an account mutation as a JSON API client with bearer
// through node 0 and checks its status (any 2xx when want is 0).
func (p *platform) mutate(t *testing.T, method, path, bearer string, want int) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+p.nodes[0].addr+path, strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = testHost
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+bearer)
	resp, err := e2eClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if (want != 0 && resp.StatusCode != want) || (want == 0 && resp.StatusCode/100 != 2) {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, body)
	}
}

// dialBearerWS opens user's app WebSocket through node i as an API client.
func (p *platform) dialBearerWS(t *testing.T, i int, user, bearer string) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	hdr := http.Header{"Authorization": {"Bearer " + bearer}, "Host": {testHost}}
	c, _, err := d.DialContext(context.Background(), "ws://"+p.nodes[i].addr+"/u/"+user+"/api/ws", hdr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
