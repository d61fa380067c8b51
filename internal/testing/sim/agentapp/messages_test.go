package agentapp

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func postJSON(ta *testApp, cookie *http.Cookie, body string) response {
	ta.t.Helper()
	return ta.do(http.MethodPost, "/api/messages", strings.NewReader(body), cookie, func(r *http.Request) {
		r.Header.Set("Content-Type", "application/json")
	})
}

func postForm(ta *testApp, cookie *http.Cookie, text string) response {
	ta.t.Helper()
	body := url.Values{"text": {text}}.Encode()
	return ta.do(http.MethodPost, "/api/messages", strings.NewReader(body), cookie, func(r *http.Request) {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	})
}

func listMessages(t *testing.T, ta *testApp, cookie *http.Cookie) []Message {
	t.Helper()
	resp := ta.get("/api/messages", cookie)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/messages: status %d", resp.StatusCode)
	}
	var msgs []Message
	if err := json.Unmarshal([]byte(resp.body), &msgs); err != nil {
		t.Fatalf("decode messages %q: %v", resp.body, err)
	}
	return msgs
}

func texts(msgs []Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Text)
	}
	return out
}

func TestMessagesSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	opts := Defaults()
	opts.DataDir = dir
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	opts.Now = func() time.Time { return now }

	first := startApp(t, opts)
	oldCookie := first.login()
	if got := listMessages(t, first, oldCookie); got == nil || len(got) != 0 {
		t.Fatalf("fresh log: %v, want an empty list", got)
	}
	resp := postJSON(first, oldCookie, `{"text":"  first message  "}`)
	var m Message
	if resp.StatusCode != http.StatusCreated || json.Unmarshal([]byte(resp.body), &m) != nil {
		t.Fatalf("JSON post: status %d body %q", resp.StatusCode, resp.body)
	}
	if m.Seq != 1 || m.Text != "first message" || !m.Time.Equal(now) {
		t.Fatalf("stored %+v", m)
	}
	resp = postForm(first, oldCookie, "second message")
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "../" {
		t.Fatalf("form post: status %d, Location %q; want 303 to ../", resp.StatusCode, resp.Header.Get("Location"))
	}
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}

	second := startApp(t, opts)
	if second.token == first.token {
		t.Fatalf("restart kept the launch token")
	}
	if resp := second.get("/api/messages", oldCookie); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("cookie from before the restart: status %d, want 401", resp.StatusCode)
	}
	cookie := second.login()
	if got := texts(listMessages(t, second, cookie)); strings.Join(got, "|") != "first message|second message" {
		t.Fatalf("after restart: %q", got)
	}
	if resp := postJSON(second, cookie, `{"text":"third"}`); !strings.Contains(resp.body, `"seq":3`) {
		t.Fatalf("third post: %d %q, want seq 3", resp.StatusCode, resp.body)
	}
	raw, err := os.ReadFile(filepath.Join(dir, conversationFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), "\n"); n != 3 {
		t.Fatalf("%s has %d lines, want 3:\n%s", conversationFile, n, raw)
	}
}

func TestMessagesRejected(t *testing.T) {
	ta := startApp(t, Defaults())
	cookie := ta.login()
	tests := []struct {
		name        string
		contentType string
		body        string
		want        int
	}{
		{"empty JSON text", "application/json", `{"text":"   "}`, http.StatusBadRequest},
		{"malformed JSON", "application/json", `{"text":`, http.StatusBadRequest},
		{"empty form", "application/x-www-form-urlencoded", ``, http.StatusBadRequest},
		{"plain text", "text/plain", `hello`, http.StatusUnsupportedMediaType},
		{"text too long", "application/json", `{"text":"` + strings.Repeat("x", maxMessageText+1) + `"}`, http.StatusRequestEntityTooLarge},
		{"body too large", "application/json", `{"text":"` + strings.Repeat("x", maxMessageBody) + `"}`, http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := ta.do(http.MethodPost, "/api/messages", strings.NewReader(tt.body), cookie, func(r *http.Request) {
				r.Header.Set("Content-Type", tt.contentType)
			})
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d (%q)", resp.StatusCode, tt.want, resp.body)
			}
		})
	}
	if got := listMessages(t, ta, cookie); len(got) != 0 {
		t.Fatalf("rejected posts were stored: %v", got)
	}
}

func TestMessagesSkipTornLine(t *testing.T) {
	dir := t.TempDir()
	log := `{"seq":1,"time":"2026-05-01T12:00:00Z","text":"kept"}` + "\n" + `{"seq":2,"time":"2026-05-01T12:00:01Z","te`
	if err := os.WriteFile(filepath.Join(dir, conversationFile), []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := Defaults()
	opts.DataDir = dir

	first := startApp(t, opts)
	cookie := first.login()
	if got := texts(listMessages(t, first, cookie)); strings.Join(got, "|") != "kept" {
		t.Fatalf("loaded %q, want the one whole line", got)
	}
	if !strings.Contains(first.stderr.String(), "line 2 skipped") {
		t.Errorf("stderr does not report the torn line:\n%s", first.stderr)
	}
	postJSON(first, cookie, `{"text":"after the tear"}`)
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}

	second := startApp(t, opts)
	if got := texts(listMessages(t, second, second.login())); strings.Join(got, "|") != "kept|after the tear" {
		t.Fatalf("after restart: %q", got)
	}
}
