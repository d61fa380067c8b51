package agentapp

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

var urlAttr = regexp.MustCompile(`\b(?:src|href|action)="([^"]*)"`)

func TestPage(t *testing.T) {
	ta := startApp(t, Defaults())
	cookie := ta.login()

	resp := ta.get("/", cookie)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /: status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !strings.Contains(resp.body, `<base href="./">`) {
		t.Errorf("page lacks <base href=\"./\">")
	}
	for _, id := range []string{"status", "conversation", "message-form", "message-text", "events", "event-count", "ws-status", "ws-echo", "ws-ticks", "ws-form", "ws-text"} {
		if !strings.Contains(resp.body, `id="`+id+`"`) {
			t.Errorf("page lacks #%s", id)
		}
	}
	urls := urlAttr.FindAllStringSubmatch(resp.body, -1)
	if len(urls) < 3 {
		t.Fatalf("page has %d URL attributes, want the stylesheet, script and form at least", len(urls))
	}
	for _, m := range urls {
		if u := m[1]; strings.HasPrefix(u, "/") || strings.Contains(u, ":") {
			t.Errorf("page URL %q is not relative", u)
		}
	}
	if strings.Contains(resp.body, "<script>") || strings.Contains(resp.body, "<style>") {
		t.Errorf("page has inline script or style")
	}

	for name, wantType := range map[string]string{
		"app.css": "text/css; charset=utf-8",
		"app.js":  "text/javascript; charset=utf-8",
	} {
		resp := ta.get("/assets/"+name, cookie)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != wantType || resp.body == "" {
			t.Errorf("GET /assets/%s: status %d, type %q, %d bytes", name, resp.StatusCode, resp.Header.Get("Content-Type"), len(resp.body))
		}
	}
	if resp := ta.get("/assets/index.html", cookie); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /assets/index.html: status %d, want 404", resp.StatusCode)
	}
}

func TestScriptUsesRelativeURLs(t *testing.T) {
	js, err := static.ReadFile("static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	src := string(js)
	for _, want := range []string{
		`fetch("api/messages"`,
		`new EventSource("api/events")`,
		`new URL("api/ws", document.baseURI)`,
		`location.protocol === "https:" ? "wss:" : "ws:"`,
	} {
		if !strings.Contains(src, want) {
			t.Errorf("app.js lacks %s", want)
		}
	}
	for _, bad := range regexp.MustCompile(`["'](/[^"']*|[a-z]+://[^"']*)["']`).FindAllString(src, -1) {
		t.Errorf("app.js has an absolute URL %s", bad)
	}
}
