package authapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/testing/logbuf"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// auditLines parses the audit events in buf, failing on any line that is
// not JSON or not marked log=audit.
func auditLines(t *testing.T, buf *logbuf.Buffer) []map[string]any {
	t.Helper()
	lines := testkit.JSONLines(t, buf.String())
	for _, line := range lines {
		if line["log"] != "audit" || line["msg"] != "audit" {
			t.Fatalf("line on the audit stream is not an audit event: %v", line)
		}
	}
	return lines
}

// auditStep is one account action and the one audit event it must write.
type auditStep struct {
	name string
	do   func() *http.Response
	want map[string]any
}

// TestEveryAccountActionIsAuditedOnce runs each account action (and
// failures of some) against one replica and checks that each wrote exactly
// one audit event with the user, client, outcome, status and replica, that
// the events go to the audit stream only, and that no token or cookie of
// the test occurs in them.
func TestEveryAccountActionIsAuditedOnce(t *testing.T) {
	e := newEnv(t)
	e.warm(t)
	audit := &logbuf.Buffer{}
	in := e.start(t, func(o *Options) {
		o.Audit = slog.New(slog.NewJSONHandler(audit, nil))
		o.Replica = "authapi-7"
		o.AuthProxyHeader = "X-Forwarded-User"
	})
	var secrets []string
	keep := func(resp *http.Response, body string) *http.Response {
		for _, c := range resp.Cookies() {
			secrets = append(secrets, c.Value)
		}
		var out accountResponse
		if json.Unmarshal([]byte(body), &out) == nil && out.Token != "" {
			secrets = append(secrets, out.Token)
		}
		return resp
	}
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	token, ck := in.signupJSON(t, "alice")
	secrets = append(secrets, token, ck.Value)
	var rotated, dave accountResponse
	proxyTok := saToken(t, e.ns, "nodeproxy", DefaultInternalAudience)
	secrets = append(secrets, proxyTok, "wrong-token-never-logged")

	steps := []auditStep{
		{"login", func() *http.Response {
			return keep(in.do(t, req{method: "POST", path: "/login", header: bearer(token)}))
		}, map[string]any{"action": "login", "user": "alice", "auth": "token", "outcome": "ok", "status": 200.0}},
		{"failed login", func() *http.Response {
			return keep(in.do(t, req{method: "POST", path: "/login", json: `{"user":"alice","token":"wrong-token-never-logged"}`}))
		}, map[string]any{"action": "login", "user": "alice", "auth": "token", "outcome": "bad_credentials", "status": 401.0}},
		{"rotate", func() *http.Response {
			resp, body := in.do(t, req{method: "POST", path: "/users/alice/token", header: bearer(token)})
			mustJSON(t, body, &rotated)
			return keep(resp, body)
		}, map[string]any{"action": "token_rotate", "user": "alice", "auth": "token", "outcome": "ok", "status": 200.0}},
		{"logout everywhere", func() *http.Response {
			return keep(in.do(t, req{method: "POST", path: "/users/alice/logout", header: bearer(rotated.Token)}))
		}, map[string]any{"action": "logout_everywhere", "user": "alice", "auth": "token", "outcome": "ok", "status": 204.0}},
		{"wake", func() *http.Response {
			return keep(in.do(t, req{method: "POST", path: wakePath, json: `{"user":"alice"}`, header: bearer(proxyTok)}))
		}, map[string]any{"action": "wake", "user": "alice", "auth": "service_account", "outcome": "ok", "status": 200.0,
			"caller": "system:serviceaccount:" + e.ns + ":nodeproxy"}},
		{"recreate", func() *http.Response {
			return keep(in.do(t, req{method: "POST", path: "/recreate", header: bearer(rotated.Token)}))
		}, map[string]any{"action": "recreate", "user": "alice", "auth": "token", "outcome": "ok"}},
		{"logout", func() *http.Response {
			return keep(in.do(t, req{method: "POST", path: "/logout", cookies: []*http.Cookie{ck}, header: in.origin()}))
		}, map[string]any{"action": "logout", "auth": "session", "outcome": "ok", "status": 204.0}},
		{"delete by another user", func() *http.Response {
			return keep(in.do(t, req{method: "DELETE", path: "/users/bob", header: bearer(token)}))
		}, map[string]any{"action": "delete", "user": "bob", "auth": "token", "outcome": "bad_credentials", "status": 401.0}},
		{"SSO first sign-in", func() *http.Response {
			return keep(in.do(t, req{method: "POST", path: "/users", json: `{}`, header: map[string]string{"X-Forwarded-User": "carol"}}))
		}, map[string]any{"action": "signup", "user": "carol", "auth": "sso", "outcome": "ok", "status": 201.0}},
		{"SSO login", func() *http.Response {
			return keep(in.do(t, req{method: "POST", path: "/login", header: map[string]string{"X-Forwarded-User": "carol"}}))
		}, map[string]any{"action": "login", "user": "carol", "auth": "sso", "outcome": "ok", "status": 200.0}},
		{"signup taken", func() *http.Response {
			return keep(in.do(t, req{method: "POST", path: "/users", json: `{"user":"carol"}`, header: map[string]string{"X-Forwarded-User": "carol"}}))
		}, map[string]any{"action": "signup", "user": "carol", "auth": "sso", "outcome": "exists", "status": 409.0}},
		{"signup", func() *http.Response {
			resp, body := in.do(t, req{method: "POST", path: "/users", json: `{"user":"dave"}`})
			mustJSON(t, body, &dave)
			return keep(resp, body)
		}, map[string]any{"action": "signup", "user": "dave", "auth": "none", "outcome": "ok", "status": 201.0}},
		{"delete", func() *http.Response {
			return keep(in.do(t, req{method: "DELETE", path: "/users/dave", header: bearer(dave.Token)}))
		}, map[string]any{"action": "delete", "user": "dave", "auth": "token", "outcome": "ok", "status": 204.0}},
	}
	for _, st := range steps {
		before := len(auditLines(t, audit))
		st.do()
		events := auditLines(t, audit)[before:]
		if len(events) != 1 {
			t.Errorf("%s: %d audit events, want 1: %v", st.name, len(events), events)
			continue
		}
		ev := events[0]
		for k, v := range st.want {
			if ev[k] != v {
				t.Errorf("%s: audit %s = %v, want %v", st.name, k, ev[k], v)
			}
		}
		if ev["replica"] != "authapi-7" || ev["client"] != "127.0.0.1" {
			t.Errorf("%s: audit replica %v, client %v", st.name, ev["replica"], ev["client"])
		}
	}
	all := audit.String()
	for _, s := range secrets {
		if len(s) >= 8 && strings.Contains(all, s) {
			t.Errorf("audit stream holds a secret (%d bytes)", len(s))
		}
	}
	if strings.Contains(in.logs.String(), `"log":"audit"`) {
		t.Error("audit events also went to the main log")
	}
}
