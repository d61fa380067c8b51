package nodeproxy

import (
	"net/netip"
	"testing"

	"github.com/valyala/fasthttp"
)

func TestRewriteLocation(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/", "/u/alice/"},
		{"/x?y=1#z", "/u/alice/x?y=1#z"},
		{"//evil.test/x", "//evil.test/x"},
		{"/\\evil.test", "/\\evil.test"},
		{"https://gw.example.test/x", "https://gw.example.test/x"},
		{"x/y", "x/y"},
		{"", ""},
	} {
		if got := string(rewriteLocation("/u/alice", []byte(tc.in))); got != tc.want {
			t.Errorf("rewriteLocation(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestForApp(t *testing.T) {
	// X-User is the configured AUTH_PROXY_HEADER: refused even when
	// allowlisted (which Validate refuses too).
	deny := headerPolicy{authProxy: "x-user"}
	allow := headerPolicy{allow: canonicalHeaders([]string{"Accept", " X-Custom ", "X-User"}), authProxy: "x-user"}
	conn := [][]byte{[]byte("x-listed")}
	for _, tc := range []struct {
		name               string
		deny, allow, forWS bool
	}{
		{"accept", true, true, true},
		{"x-custom", true, true, true},
		{"content-type", true, true, true},
		{"user-agent", true, false, true},
		{"cookie", false, false, false},
		{"authorization", false, false, false},
		{"host", false, false, false},
		{"forwarded", false, false, false},
		{"x-forwarded-for", false, false, false},
		{"x-forwarded-user", false, false, false},
		{"x-auth-request-user", false, false, false},
		{"x-real-ip", false, false, false},
		{"x-user", false, false, false},
		{"x-sandgate-hop", false, false, false},
		{"connection", false, false, false},
		{"upgrade", false, false, false},
		{"te", false, false, false},
		{"x-listed", false, false, false},
		{"sec-websocket-key", true, false, false},
		{"sec-websocket-protocol", true, false, false},
		{"origin", true, false, true},
	} {
		n := []byte(tc.name)
		if got := deny.forApp(n, conn, false); got != tc.deny {
			t.Errorf("denylist forApp(%s) = %v", tc.name, got)
		}
		if got := allow.forApp(n, conn, false); got != tc.allow {
			t.Errorf("allowlist forApp(%s) = %v", tc.name, got)
		}
		if got := deny.forApp(n, conn, true); got != tc.forWS {
			t.Errorf("WebSocket forApp(%s) = %v", tc.name, got)
		}
	}
}

func TestForwardedOf(t *testing.T) {
	var h fasthttp.RequestHeader
	h.SetHost("gw.example.test")
	h.Set("X-Forwarded-For", "203.0.113.9")
	h.Set("X-Forwarded-Proto", "https")
	h.Set("X-Forwarded-Host", "public.example.test")
	peer := netip.MustParseAddr("10.0.0.7")
	if f := forwardedOf(&h, peer, false, false); f != (forwarded{"10.0.0.7", "http", "gw.example.test"}) {
		t.Errorf("untrusted peer: %+v", f)
	}
	if f := forwardedOf(&h, peer, false, true); f != (forwarded{"203.0.113.9, 10.0.0.7", "https", "public.example.test"}) {
		t.Errorf("trusted peer: %+v", f)
	}
	h.Set("X-Forwarded-Proto", "gopher")
	h.Set("X-Forwarded-Host", "bad host\r\n")
	if f := forwardedOf(&h, peer, true, true); f.proto != "https" || f.host != "gw.example.test" {
		t.Errorf("bad forwarded values kept: %+v", f)
	}
}

func TestCopyResponse(t *testing.T) {
	var src, dst fasthttp.ResponseHeader
	src.SetStatusCode(302)
	src.Set("Location", "/next")
	src.Set("Set-Cookie", "dsh-auth-1=secret; Path=/")
	src.Set("Connection", "close, X-Hop")
	src.Set("X-Hop", "1")
	src.Set("Keep-Alive", "timeout=5")
	src.Set("Content-Encoding", "gzip")
	src.Set("X-App", "yes")
	respPolicy{locationPrefix: "/u/alice"}.copyResponse(&dst, &src)
	if dst.StatusCode() != 302 || string(dst.Peek("Location")) != "/u/alice/next" {
		t.Errorf("status %d Location %q", dst.StatusCode(), dst.Peek("Location"))
	}
	for _, name := range []string{"Set-Cookie", "X-Hop", "Keep-Alive"} {
		if v := dst.Peek(name); len(v) > 0 {
			t.Errorf("%s passed: %q", name, v)
		}
	}
	if string(dst.Peek("Content-Encoding")) != "gzip" || string(dst.Peek("X-App")) != "yes" {
		t.Errorf("end-to-end headers lost: %s", dst.String())
	}
	var kept fasthttp.ResponseHeader
	respPolicy{keepCookies: true}.copyResponse(&kept, &src)
	if len(kept.Peek("Set-Cookie")) == 0 || string(kept.Peek("Location")) != "/next" {
		t.Errorf("auth API policy: %s", kept.String())
	}
}
