package nodeproxy

import (
	"net/netip"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/requestpath/headerrule"
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

// TestHeaderRules is the table of every direction's header rule: which
// header (lower case) passes to the app (denylist, allowlist and
// WebSocket dial), to a peer, to the auth API (identity unproven and
// proven), and back from the app (platform origin, own origin) and the
// auth API.
func TestHeaderRules(t *testing.T) {
	// X-User is the configured AUTH_PROXY_HEADER: refused even when
	// allowlisted (which Validate refuses too).
	deny := newHeaderRules(nil, "X-User")
	allow := newHeaderRules([]string{"Accept", " X-Custom ", "X-User"}, "X-User")
	type dir struct {
		name string
		rule *headerrule.Rule
	}
	dirs := []dir{
		{"app", deny.toApp.HTTP}, {"app allowlist", allow.toApp.HTTP}, {"app dial", deny.toApp.Dial},
		{"peer", allow.toPeer.HTTP}, {"peer dial", allow.toPeer.Dial},
		{"auth API", deny.toAuthAPI}, {"auth API asserted", deny.toAuthAPIAsserted},
		{"from app", deny.fromApp}, {"from own-origin app", deny.fromOwnOriginApp}, {"from auth API", deny.fromAuthAPI},
	}
	const (
		y = true
		n = false
	)
	for _, tc := range []struct {
		header string
		passes []bool // in the order of dirs
	}{
		{"accept", []bool{y, y, y, y, y, y, y, y, y, y}},
		{"x-custom", []bool{y, y, y, y, y, y, y, y, y, y}},
		{"content-type", []bool{y, y, y, y, y, y, y, y, y, y}},
		{"user-agent", []bool{y, n, y, y, y, y, y, y, y, y}},
		{"origin", []bool{y, n, y, y, y, y, y, y, y, y}},
		{"cookie", []bool{n, n, n, n, n, y, y, y, y, y}},
		{"authorization", []bool{n, n, n, n, n, y, y, y, y, y}},
		{"host", []bool{n, n, n, n, n, n, n, y, y, y}},
		{"content-length", []bool{n, n, n, n, n, n, n, n, n, n}},
		{"expect", []bool{n, n, n, n, n, n, n, y, y, y}},
		{"forwarded", []bool{n, n, n, n, n, n, y, y, y, y}},
		{"x-real-ip", []bool{n, n, n, n, n, n, y, y, y, y}},
		{"x-forwarded-for", []bool{n, n, n, n, n, n, y, y, y, y}},
		{"x-forwarded-user", []bool{n, n, n, n, n, n, y, y, y, y}},
		{"x-auth-request-user", []bool{n, n, n, n, n, n, y, y, y, y}},
		{"remote-user", []bool{n, n, n, n, n, n, y, y, y, y}},
		{"x-user", []bool{n, n, n, n, n, y, y, y, y, y}},
		{"x-sandgate-hop", []bool{n, n, n, n, n, n, n, n, n, y}},
		{"x-sandgate-moved", []bool{n, n, n, n, n, n, n, n, n, y}},
		{"connection", []bool{n, n, n, n, n, n, n, n, n, n}},
		{"upgrade", []bool{n, n, n, n, n, n, n, n, n, n}},
		{"te", []bool{n, n, n, n, n, n, n, n, n, n}},
		{"transfer-encoding", []bool{n, n, n, n, n, n, n, n, n, n}},
		{"sec-websocket-key", []bool{y, n, n, y, n, y, y, y, y, y}},
		{"sec-websocket-protocol", []bool{y, n, n, y, n, y, y, y, y, y}},
		{"set-cookie", []bool{y, n, y, y, y, y, y, n, n, y}},
		{"clear-site-data", []bool{y, n, y, y, y, y, y, n, n, y}},
		{"service-worker-allowed", []bool{y, n, y, y, y, y, y, n, y, y}},
		{"strict-transport-security", []bool{y, n, y, y, y, y, y, n, y, y}},
		{"cross-origin-opener-policy", []bool{y, n, y, y, y, y, y, n, y, y}},
		{"location", []bool{y, n, y, y, y, y, y, y, y, y}},
	} {
		for i, d := range dirs {
			if got := d.rule.Passes([]byte(tc.header)); got != tc.passes[i] {
				t.Errorf("%s: %s passes = %v, want %v", d.name, tc.header, got, tc.passes[i])
			}
		}
	}
}

// TestConnectionListed: every direction drops what a Connection header
// names, in requests and responses alike.
func TestConnectionListed(t *testing.T) {
	rules := newHeaderRules(nil, "")
	var req, out fasthttp.RequestHeader
	req.Set("Connection", "keep-alive, X-Listed")
	req.Set("X-Listed", "1")
	req.Set("X-Kept", "1")
	for _, r := range []*headerrule.Rule{rules.toApp.HTTP, rules.toPeer.HTTP, rules.toAuthAPI} {
		out.Reset()
		r.CopyRequest(&out, &req)
		if len(out.Peek("X-Listed")) > 0 || string(out.Peek("X-Kept")) != "1" {
			t.Errorf("request copied as %q", out.String())
		}
		if h := r.DialHeader(&req); h.Get("X-Listed") != "" || h.Get("X-Kept") != "1" {
			t.Errorf("dial header %v", h)
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
	if f := forwardedOf(&h, "gw.example.test", peer, false, false); f != (forwarded{"10.0.0.7", "http", "gw.example.test"}) {
		t.Errorf("untrusted peer: %+v", f)
	}
	if f := forwardedOf(&h, "gw.example.test", peer, false, true); f != (forwarded{"203.0.113.9, 10.0.0.7", "https", "public.example.test"}) {
		t.Errorf("trusted peer: %+v", f)
	}
	h.Set("X-Forwarded-Proto", "gopher")
	h.Set("X-Forwarded-Host", "bad host\r\n")
	if f := forwardedOf(&h, "gw.example.test", peer, true, true); f.proto != "https" || f.host != "gw.example.test" {
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
	respPolicy{rule: newHeaderRules(nil, "").fromOwnOriginApp, locationPrefix: "/u/alice"}.copyResponse(&dst, &src)
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
	respPolicy{rule: newHeaderRules(nil, "").fromAuthAPI}.copyResponse(&kept, &src)
	if len(kept.Peek("Set-Cookie")) == 0 || string(kept.Peek("Location")) != "/next" {
		t.Errorf("auth API policy: %s", kept.String())
	}
}
