package nodeproxy_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/sandgate/sandgate/internal/accountpath/authapi"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/requestpath/nodeproxy"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestE2EKeyRotationKeepsIdleUsers: alice signs up, then goes idle while
// the auth API's signing key rotates twice and her key leaves the JWKS
// (the auth API keeps it for renewal; the rotations are written into the
// signing Secret as hours-old, which is what a real idle spell leaves). Once the node proxies have
// refreshed their key set (a later user's token, signed with the newest
// key, makes them), alice's old cookie names a kid they do not know. Her
// next request, WebSocket and event stream are served on both nodes
// without signing in, her session renewed by the auth API.
func TestE2EKeyRotationKeepsIdleUsers(t *testing.T) {
	p := startPlatform(t)
	alice := p.signupUnseen(0, "alice")
	oldKID := tokenKID(t, alice.session)

	newest := p.rotateTwiceWhileIdle(t, oldKID)
	testkit.Eventually(t, "the auth API's JWKS without alice's key", func() bool {
		kids := p.publishedKIDs(t)
		return !kids[oldKID] && kids[newest]
	})

	bob := p.signup(1, "bob")
	if kid := tokenKID(t, bob.session); kid != newest {
		t.Fatalf("bob's session is signed by %q, want the newest key %q", kid, newest)
	}
	ver := p.nodes[0].d.Verifier()
	testkit.Eventually(t, "the node proxies' key set refreshed by bob's token", func() bool {
		_, err := ver.Verify(bob.session)
		return err == nil
	})
	if _, err := ver.Verify(alice.session); !errors.Is(err, jwt.ErrUnknownKey) {
		t.Fatalf("the node proxies verify alice's old session offline (%v): the test would not reach renewal", err)
	}

	for i, n := range p.nodes {
		resp := p.get(i, "/u/alice/api/echo", map[string]string{"Cookie": cookie(alice.session)})
		if body := readAll(t, resp); resp.StatusCode != http.StatusOK {
			t.Fatalf("request via %s after two rotations: %d %s", n.name, resp.StatusCode, body)
		}
		renewed := ""
		for _, c := range resp.Cookies() {
			if c.Name == nodeproxy.DefaultCookieName {
				renewed = c.Value
			}
		}
		if renewed == "" || tokenKID(t, renewed) != newest {
			t.Errorf("via %s: no session renewed with the newest key (Set-Cookie %q)", n.name, resp.Header.Get("Set-Cookie"))
		}

		c := p.dialWS(t, i, "alice", alice.session)
		echoes(t, c, "via "+n.name+" after two rotations")
		c.Close()

		stream := p.get(i, "/u/alice/api/events", map[string]string{"Cookie": cookie(alice.session)})
		if stream.StatusCode != http.StatusOK {
			readAll(t, stream)
			t.Fatalf("event stream via %s after two rotations: %d", n.name, stream.StatusCode)
		}
		if !firstEvent(stream) {
			t.Errorf("event stream via %s after two rotations sent no event", n.name)
		}
	}
}

// TestE2EKeyResetReachesEveryNodeProxy: after an operator resets the
// signing keys (a leak), every node proxy stops accepting the old keys'
// sessions within a report interval, although no token of the new key
// reaches it and its periodic JWKS refresh is minutes away: the auth API
// names the JWKS it serves in its answers to the node proxies' activity
// reports, and a node proxy holding another version fetches it again.
// The session's open WebSockets end with 4401 then, on the pod's node and
// through a hop; a bearer token's socket stays open.
func TestE2EKeyResetReachesEveryNodeProxy(t *testing.T) {
	p := startPlatform(t)
	alice := p.signup(0, "alice")
	oldKID := tokenKID(t, alice.session)
	for i, n := range p.nodes {
		resp := p.get(i, "/u/alice/api/echo", map[string]string{"Cookie": cookie(alice.session)})
		if body := readAll(t, resp); resp.StatusCode != http.StatusOK {
			t.Fatalf("alice via %s before the reset: %d %s", n.name, resp.StatusCode, body)
		}
	}

	home := p.podNode("alice")
	local, hopped := p.dialWS(t, home, "alice", alice.session), p.dialWS(t, 1-home, "alice", alice.session)
	bearer := p.dialBearerWS(t, home, "alice", alice.bearer)
	for _, c := range []*websocket.Conn{local, hopped, bearer} {
		echoes(t, c, "before the reset")
	}

	secrets := p.kube.CoreV1().Secrets(p.ns)
	reset := time.Now()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sec, err := secrets.Get(t.Context(), authapi.DefaultSigningSecret, metav1.GetOptions{})
		if err != nil {
			return err
		}
		metav1.SetMetaDataAnnotation(&sec.ObjectMeta, authapi.ResetKeysAnnotation, "2026-12-03T13:00:00Z")
		_, err = secrets.Update(t.Context(), sec, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("annotate the signing Secret: %v", err)
	}
	testkit.Eventually(t, "the auth API's JWKS without the old key", func() bool { return !p.publishedKIDs(t)[oldKID] })

	for i, n := range p.nodes {
		testkit.Eventually(t, n.name+" refusing alice's session of the reset key", func() bool {
			resp := p.get(i, "/u/alice/api/echo", map[string]string{"Cookie": cookie(alice.session)})
			readAll(t, resp)
			return resp.StatusCode == http.StatusUnauthorized
		})
	}
	t.Logf("both node proxies refused the old session %v after the reset", time.Since(reset).Round(time.Millisecond))
	for name, c := range map[string]*websocket.Conn{"on the pod's node": local, "through a hop": hopped} {
		if got := closeCode(t, c); got != closeUnauthenticated {
			t.Errorf("alice's cookie socket %s after the reset: close %d, want %d", name, got, closeUnauthenticated)
		}
	}
	echoes(t, bearer, "alice's API client after the reset")
}

// signupUnseen signs user up through node i's proxy and waits until the
// app is served with the account's bearer token, so no node proxy has
// verified (and cached) the session cookie: as for a user idle longer
// than the session token lives, whose token left the verifiers' cache.
func (p *platform) signupUnseen(i int, user string) e2eAccount {
	p.t.Helper()
	a := p.createAccount(i, user)
	p.waitServed(i, testHost, "/u/"+user+"/api/echo", map[string]string{"Authorization": "Bearer " + a.bearer})
	return a
}

// sendBody sends a JSON body with method to node i's proxy.
func (p *platform) sendBody(i int, method, path, body string) *http.Response {
	p.t.Helper()
	req, err := http.NewRequest(method, "http://"+p.nodes[i].addr+path, strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	req.Host = testHost
	req.Header.Set("Content-Type", "application/json")
	resp, err := e2eClient.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	return resp
}

// rotateTwiceWhileIdle rewrites the auth API's signing Secret as two
// rotations an hour apart would have left it: keyKID (the only key so far)
// active three hours ago, then two keys that took over two hours and one
// hour ago. keyKID stopped signing long enough ago to be out of the JWKS,
// and not so long that the auth API prunes it. It returns the newest kid.
func (p *platform) rotateTwiceWhileIdle(t *testing.T, keyKID string) string {
	t.Helper()
	secrets := p.kube.CoreV1().Secrets(p.ns)
	var newest string
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sec, err := secrets.Get(t.Context(), authapi.DefaultSigningSecret, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var ring struct {
			Keys []map[string]any `json:"keys"`
		}
		if err := json.Unmarshal(sec.Data["signing-keys.json"], &ring); err != nil {
			t.Fatalf("read the signing keys: %v", err)
		}
		if len(ring.Keys) != 1 || ring.Keys[0]["kid"] != keyKID {
			t.Fatalf("the signing Secret holds %d keys, want only alice's %q", len(ring.Keys), keyKID)
		}
		now := time.Now().UTC().Truncate(time.Second)
		ring.Keys[0]["created"], ring.Keys[0]["active"] = now.Add(-3*time.Hour), now.Add(-3*time.Hour)
		for _, age := range []time.Duration{2 * time.Hour, time.Hour} {
			r := jwt.NewKeyRing(now.Add(-age))
			data, err := r.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			var fresh struct {
				Keys []map[string]any `json:"keys"`
			}
			if err := json.Unmarshal(data, &fresh); err != nil {
				t.Fatal(err)
			}
			ring.Keys = append(ring.Keys, fresh.Keys[0])
			newest = r.SigningKID(now)
		}
		data, err := json.Marshal(ring)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := jwt.UnmarshalKeyRing(data); err != nil {
			t.Fatalf("the rotated ring does not parse: %v", err)
		}
		sec = sec.DeepCopy()
		sec.Data["signing-keys.json"] = data
		_, err = secrets.Update(t.Context(), sec, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("rotate the signing keys: %v", err)
	}
	return newest
}

// publishedKIDs lists the kids of the auth API's JWKS.
func (p *platform) publishedKIDs(t *testing.T) map[string]bool {
	t.Helper()
	resp, err := e2eClient.Get(p.authURL + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Keys []struct {
			KID string `json:"kid"`
		} `json:"keys"`
	}
	err = json.NewDecoder(resp.Body).Decode(&set)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	kids := map[string]bool{}
	for _, k := range set.Keys {
		kids[k.KID] = true
	}
	return kids
}

// tokenKID reads the kid from a JWT's header, unverified.
func tokenKID(t *testing.T, token string) string {
	t.Helper()
	head, _, _ := strings.Cut(token, ".")
	data, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		t.Fatalf("token header: %v", err)
	}
	var h struct {
		KID string `json:"kid"`
	}
	if err := json.Unmarshal(data, &h); err != nil || h.KID == "" {
		t.Fatalf("token header %q: no kid (%v)", data, err)
	}
	return h.KID
}

// firstEvent reports whether the stream delivers a data line, then closes
// it.
func firstEvent(resp *http.Response) bool {
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return false
		}
		if strings.HasPrefix(line, "data: ") {
			return true
		}
	}
}
