package egress

import (
	"net/http"
	"strings"
	"testing"
)

// TestSharedKeyCannotListStoredCompletions: GET on a generation path
// (OpenAI lists the project's stored completions there) is refused with
// 405 and never reaches the provider.
func TestSharedKeyCannotListStoredCompletions(t *testing.T) {
	e := newEnv(t, nil)
	resp := e.do(bobIP, http.MethodGet, "/openai/chat/completions?limit=100", "")
	if status, body := read(t, resp); status != http.StatusMethodNotAllowed || !strings.Contains(body, `"type":"sandgate_egress"`) {
		t.Errorf("GET /openai/chat/completions = %d %s, want 405", status, body)
	}
	if n := len(e.provider.requests()); n != 0 {
		t.Errorf("provider saw %d requests", n)
	}
}

// TestStoredStateOnSharedKey: on the shared key, fields that reach the
// provider's stored state of the whole project are refused with 403; a
// user's own key lifts that.
func TestStoredStateOnSharedKey(t *testing.T) {
	e := newEnv(t, nil)
	e.writeKey("openai.bob", "sk-real-bob")
	for _, tt := range []struct{ name, path, body string }{
		{"store", "/openai/chat/completions", `{"model":"m","store":true,"messages":[]}`},
		{"previous response", "/openai/responses", `{"model":"m","previous_response_id":"resp_1","input":"hi"}`},
		{"conversation", "/openai/responses", `{"model":"m","conversation":"conv_1","input":"hi"}`},
		{"file id", "/openai/chat/completions", `{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}}]}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, body := read(t, e.call(aliceIP, tt.path, tt.body))
			if status != http.StatusForbidden || !strings.Contains(body, "shared key") {
				t.Errorf("alice (shared key) = %d %s, want 403", status, body)
			}
			if status, body := read(t, e.call(bobIP, tt.path, tt.body)); status != http.StatusOK {
				t.Errorf("bob (own key) = %d %s, want 200", status, body)
			}
		})
	}
	for _, r := range e.provider.requests() {
		if r.Header.Get("Authorization") != "Bearer sk-real-bob" {
			t.Errorf("the provider got a stored-state call on the shared key: %s", r.Body)
		}
	}
}
