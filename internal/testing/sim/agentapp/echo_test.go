package agentapp

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestEcho(t *testing.T) {
	ta := startApp(t, Defaults())
	cookie := ta.login()
	resp := ta.do(http.MethodPatch, "/api/echo/sub%2Fpath?b=2&a=1", strings.NewReader("hello"), cookie, func(r *http.Request) {
		r.Host = "localhost:8080"
		r.Header.Set("X-Forwarded-User", "bob")
		r.Header.Add("X-Multi", "one")
		r.Header.Add("X-Multi", "two")
	})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var got Echo
	if err := json.Unmarshal([]byte(resp.body), &got); err != nil {
		t.Fatal(err)
	}
	if got.Method != http.MethodPatch || got.Path != "/api/echo/sub/path" || got.RequestURI != "/api/echo/sub%2Fpath?b=2&a=1" ||
		got.RawQuery != "b=2&a=1" || got.Host != "localhost:8080" || got.BodyLength != 5 {
		t.Errorf("echo %+v", got)
	}
	if got.Headers.Get("X-Forwarded-User") != "bob" || strings.Join(got.Headers.Values("X-Multi"), ",") != "one,two" {
		t.Errorf("echo headers %v", got.Headers)
	}
	if !strings.Contains(got.Headers.Get("Cookie"), cookie.Name+"=") {
		t.Errorf("echo headers lack the auth cookie: %v", got.Headers)
	}
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		if resp := ta.do(method, "/api/echo", nil, cookie, nil); resp.StatusCode != http.StatusOK {
			t.Errorf("%s /api/echo: status %d", method, resp.StatusCode)
		}
	}
}
