package agentapp

import (
	"net/http"
	"regexp"
	"testing"
)

var setCookieFormat = regexp.MustCompile(`^dsh-auth-[0-9a-f]{8}=[A-Za-z0-9_-]{43}; Path=/; HttpOnly; SameSite=Lax$`)

func TestHostCheck(t *testing.T) {
	opts := Defaults()
	opts.TrustedHosts = []string{"Sandgate.Example", "other.example:8443"}
	ta := startApp(t, opts)
	cookie := ta.login()
	tests := []struct {
		host string
		ok   bool
	}{
		{host: "localhost", ok: true},
		{host: "LOCALHOST:3080", ok: true},
		{host: "127.0.0.1", ok: true},
		{host: "sandgate.example", ok: true},
		{host: "sandgate.example.:443", ok: true},
		{host: "other.example", ok: true},
		{host: "evil.example"},
		{host: "sandgate.example.evil.example"},
		{host: "127.0.0.2"},
		{host: "[::1]:3080"},
	}
	paths := []struct {
		name, target string
		cookie       *http.Cookie
		okStatus     int
	}{
		{name: "token exchange", target: "/?token=" + ta.token, okStatus: http.StatusSeeOther},
		{name: "probe", target: ProbePath, okStatus: http.StatusOK},
		{name: "page", target: "/", cookie: cookie, okStatus: http.StatusOK},
		{name: "api", target: "/api/echo", cookie: cookie, okStatus: http.StatusOK},
	}
	for _, tt := range tests {
		for _, p := range paths {
			t.Run(tt.host+"/"+p.name, func(t *testing.T) {
				resp := ta.do(http.MethodGet, p.target, nil, p.cookie, func(r *http.Request) { r.Host = tt.host })
				want := http.StatusBadRequest
				if tt.ok {
					want = p.okStatus
				}
				if resp.StatusCode != want {
					t.Fatalf("status %d, want %d", resp.StatusCode, want)
				}
				if !tt.ok && len(resp.Cookies()) != 0 {
					t.Fatalf("untrusted host got cookies %q", resp.Header.Values("Set-Cookie"))
				}
			})
		}
	}
}

func TestListenIPTrusted(t *testing.T) {
	ta := startAppOn(t, "127.0.0.2", Defaults())
	for host, want := range map[string]int{
		"127.0.0.2":      http.StatusSeeOther,
		"127.0.0.2:3080": http.StatusSeeOther,
		"127.0.0.3":      http.StatusBadRequest,
	} {
		resp := ta.do(http.MethodGet, "/?token="+ta.token, nil, nil, func(r *http.Request) { r.Host = host })
		if resp.StatusCode != want {
			t.Errorf("Host %q: status %d, want %d", host, resp.StatusCode, want)
		}
	}
}

// TestContainerHosts pins the behaviour a pod depends on: the app listens on
// 0.0.0.0 (--host 0.0.0.0), so a kubelet probe with its default Host, the
// pod IP, is refused like any untrusted Host, even on ProbePath; a probe
// that sends Host: localhost passes.
func TestContainerHosts(t *testing.T) {
	opts := Defaults()
	opts.TrustedHosts = []string{"sandgate.example"}
	ta := startAppOn(t, "0.0.0.0", opts)
	for host, want := range map[string]int{
		"10.244.1.7:3080":       http.StatusBadRequest,
		"0.0.0.0:3080":          http.StatusBadRequest,
		"localhost:3080":        http.StatusOK,
		"localhost":             http.StatusOK,
		"127.0.0.1:9999":        http.StatusOK,
		"sandgate.example:3080": http.StatusOK,
	} {
		resp := ta.do(http.MethodGet, ProbePath, nil, nil, func(r *http.Request) { r.Host = host })
		if resp.StatusCode != want {
			t.Errorf("probe with Host %q: status %d, want %d", host, resp.StatusCode, want)
		}
	}
}

func TestAuth(t *testing.T) {
	ta := startApp(t, Defaults())

	for _, target := range []string{"/", "/assets/app.js", "/api/messages", "/api/events", "/api/ws", "/api/echo", "/api/files/a.txt", "/no/such/path"} {
		if resp := ta.get(target, nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without cookie: status %d, want 401", target, resp.StatusCode)
		}
	}
	for _, token := range []string{"", "wrong", ta.token[:42], ta.token + "A"} {
		resp := ta.get("/?token="+token, nil)
		if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 {
			t.Errorf("token %q: status %d, cookies %q; want 401 and none", token, resp.StatusCode, resp.Header.Values("Set-Cookie"))
		}
	}
	if resp := ta.do(http.MethodPost, "/?token="+ta.token, nil, nil, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST token exchange: status %d, want 401", resp.StatusCode)
	}

	resp := ta.get("/?token="+ta.token, nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/" {
		t.Fatalf("token exchange: status %d, Location %q; want 303 to /", resp.StatusCode, resp.Header.Get("Location"))
	}
	setCookies := resp.Header.Values("Set-Cookie")
	if len(setCookies) != 1 || !setCookieFormat.MatchString(setCookies[0]) {
		t.Fatalf("Set-Cookie %q, want one matching %s", setCookies, setCookieFormat)
	}
	first := resp.Cookies()[0]
	second := ta.login()
	if first.Name != second.Name || first.Value == second.Value {
		t.Fatalf("two exchanges gave %s=%s and %s=%s; want one name, two values", first.Name, first.Value, second.Name, second.Value)
	}

	for _, c := range []*http.Cookie{first, second} {
		for _, target := range []string{"/", "/assets/app.js", "/api/messages"} {
			if resp := ta.get(target, c); resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s with cookie: status %d, want 200", target, resp.StatusCode)
			}
		}
	}
	if resp := ta.get("/no/such/path", first); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path with cookie: status %d, want 404", resp.StatusCode)
	}

	forged := []*http.Cookie{
		{Name: first.Name, Value: newToken()},
		{Name: first.Name, Value: first.Value[:len(first.Value)-1] + "A"},
		{Name: CookiePrefix + "00000000", Value: first.Value},
		{Name: first.Name, Value: ""},
	}
	for _, c := range forged {
		if c.Value == first.Value && c.Name == first.Name {
			continue
		}
		if resp := ta.get("/", c); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("forged cookie %s=%s: status %d, want 401", c.Name, c.Value, resp.StatusCode)
		}
	}
}

func TestProbeWithoutAuth(t *testing.T) {
	ta := startApp(t, Defaults())
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		resp := ta.do(method, ProbePath, nil, nil, nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/svg+xml" {
			t.Errorf("%s %s: status %d, type %q; want 200 image/svg+xml", method, ProbePath, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	if resp := ta.do(http.MethodPost, ProbePath, nil, nil, nil); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST %s: status %d, want 405", ProbePath, resp.StatusCode)
	}
}
