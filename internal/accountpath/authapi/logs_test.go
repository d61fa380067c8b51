package authapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestLogsHoldNoSecrets runs every flow that handles a secret and then
// searches the logs for tokens, cookies, JWTs and the invite code. It also
// checks the access log: one JSON line per request.
func TestLogsHoldNoSecrets(t *testing.T) {
	e := newEnv(t)
	e.warm(t)
	const invite = "invite-code-do-not-log"
	in := e.start(t, func(o *Options) { o.InviteCode = invite })
	inv := map[string]string{"X-Signup-Invite": invite}
	resp, body := in.do(t, req{method: "POST", path: "/users", json: `{"user":"alice"}`, header: inv})
	var out accountResponse
	mustJSON(t, body, &out)
	secrets := []string{invite, out.Token, cookie(resp, DefaultCookieName).Value}
	resp, _ = in.do(t, req{method: "POST", path: "/users", form: url.Values{"user": {"bob"}, "invite": {invite}}, header: in.origin()})
	_, _, shown := in.tokenView(t, resp)
	secrets = append(secrets, cookie(resp, DefaultCookieName).Value, cookie(resp, tokenCookieBase).Value, shown)
	in.do(t, req{method: "POST", path: "/users", json: `{"user":"carol","invite":"wrong-invite-do-not-log"}`})
	secrets = append(secrets, "wrong-invite-do-not-log")
	ck := in.login(t, out.Token)
	secrets = append(secrets, ck.Value)
	in.do(t, req{method: "POST", path: "/login", json: `{"user":"alice","token":"wrong-token-do-not-log"}`})
	secrets = append(secrets, "wrong-token-do-not-log")
	proxyTok := saToken(t, e.ns, "nodeproxy", DefaultInternalAudience)
	_, body = in.do(t, req{method: "POST", path: renewPath, json: `{"token":"` + ck.Value + `"}`, header: map[string]string{"Authorization": "Bearer " + proxyTok}})
	var rn renewResponse
	mustJSON(t, body, &rn)
	secrets = append(secrets, rn.Token, proxyTok)
	in.do(t, req{method: "POST", path: renewPath, json: `{"token":"forged.token.value"}`, header: map[string]string{"Authorization": "Bearer " + proxyTok}})
	in.do(t, req{method: "POST", path: "/logout", cookies: []*http.Cookie{ck}, header: in.origin()})
	in.do(t, req{method: "DELETE", path: "/users/alice", header: map[string]string{"Authorization": "Bearer " + out.Token}})

	logs := in.logs.String()
	for _, s := range secrets {
		if s != "" && strings.Contains(logs, s) {
			t.Errorf("logs contain a secret (%d bytes)", len(s))
		}
		// JWTs also must not appear in part: their signature segment.
		if i := strings.LastIndexByte(s, '.'); i > 0 && strings.Contains(logs, s[i+1:]) {
			t.Errorf("logs contain a JWT signature")
		}
	}
	requests := 0
	for _, line := range testkit.JSONLines(t, logs) {
		if line["msg"] == "request" {
			requests++
			for _, k := range []string{"route", "method", "path", "status", "duration_ms", "client"} {
				if _, ok := line[k]; !ok {
					t.Errorf("access log line lacks %s: %v", k, line)
				}
			}
		}
	}
	if requests != 10 {
		t.Errorf("%d access log lines for 10 requests", requests)
	}
}
