package clusterjourney

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/sandgate/sandgate/internal/clustertools/clusterinstall"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// signingKeysReset does what docs/api.md tells an operator to do after a
// signing key leak, with the RBAC and wiring that ship: it annotates the
// signing Secret and checks through both nodes that the session signed
// before the reset is refused before any token of a new key reaches them
// (the auth API's answers to their activity reports name the new JWKS) and
// that its WebSockets open through each node end with 4401, then waits
// for a login signed by a new key and checks that its session is served
// on both. It returns a with the new session.
func (j *journey) signingKeysReset(a account, nodes []int) account {
	j.t.Helper()
	old := a.cookie
	oldKID := j.kid(old)
	sockets := make([]*websocket.Conn, len(nodes))
	for k, i := range nodes {
		sockets[k] = j.dialWS(i, a)
		defer sockets[k].Close()
	}
	if out, err := j.kubectl("-n", clusterinstall.SandboxNamespace, "annotate", "secret", "sandgate-authapi-signing-keys", "--overwrite",
		"sandgate.io/reset-signing-keys="+time.Now().UTC().Format(time.RFC3339)); err != nil {
		j.t.Fatalf("annotate the signing Secret: %v %s", err, out)
	}
	for _, i := range nodes {
		testkit.Within(j.t, 30*time.Second, "the old key's session refused on "+j.e.Nodes[i], func() bool {
			resp, _ := j.do(i, http.MethodGet, "/u/"+a.user+"/api/messages", "", map[string]string{"Cookie": old, "Accept": "application/json"})
			return resp.StatusCode == http.StatusUnauthorized
		})
	}
	for k, c := range sockets {
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, err := readText(c)
		if ce, ok := errors.AsType[*websocket.CloseError](err); !ok || ce.Code != 4401 {
			j.t.Errorf("the old session's WebSocket through %s after the reset: %v, want close 4401", j.e.Nodes[nodes[k]], err)
		}
	}
	testkit.Within(j.t, time.Minute, "a login signed by a new key", func() bool {
		resp, body := j.do(nodes[0], http.MethodPost, "/login", `{"user":"`+a.user+`","token":"`+a.token+`"}`, map[string]string{
			"Content-Type": "application/json", "Accept": "application/json", "Origin": j.origin(nodes[0]),
		})
		if resp.StatusCode != http.StatusOK {
			j.t.Logf("login after the reset: %d %.200s", resp.StatusCode, body)
			return false
		}
		for _, c := range resp.Cookies() {
			if strings.HasPrefix(c.Name, "__Host-") && j.kid(c.Name+"="+c.Value) != oldKID {
				a.cookie = c.Name + "=" + c.Value
				return true
			}
		}
		return false
	})
	for _, i := range nodes {
		testkit.Within(j.t, 30*time.Second, "the new key's session served on "+j.e.Nodes[i], func() bool {
			resp, _ := j.do(i, http.MethodGet, "/u/"+a.user+"/api/messages", "", a.api(j, i, ""))
			return resp.StatusCode == http.StatusOK
		})
	}
	return a
}

// kid is the key id in the header of the session token a cookie holds.
func (j *journey) kid(cookie string) string {
	j.t.Helper()
	_, token, _ := strings.Cut(cookie, "=")
	header, _, _ := strings.Cut(token, ".")
	raw, err := base64.RawURLEncoding.DecodeString(header)
	var h struct {
		KID string `json:"kid"`
	}
	if err != nil || json.Unmarshal(raw, &h) != nil || h.KID == "" {
		j.t.Fatalf("the session cookie holds no token with a kid: %.40s…", cookie)
	}
	return h.KID
}
