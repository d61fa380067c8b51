package headerrule

import (
	"bufio"
	"bytes"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

func TestPasses(t *testing.T) {
	long := "x-" + strings.Repeat("a", 100)
	deny := New(Spec{Drop: []string{"Cookie", " Host "}, DropPrefixes: []string{"X-Forwarded-"}})
	allow := New(Spec{Drop: []string{"cookie"}, Allow: []string{"accept", "cookie"}, AllowPrefixes: []string{"x-ratelimit-"},
		Always: []string{"content-type"}})
	for _, tc := range []struct {
		name        string
		deny, allow bool
	}{
		{"accept", true, true},
		{"cookie", false, false}, // a drop beats the allowlist
		{"host", false, false},
		{"x-forwarded-for", false, false},
		{"x-forwarded-", false, false},
		{"x-forwarded", true, false},
		{"x-ratelimit-remaining", true, true},
		{"content-type", true, true},
		{"user-agent", true, false},
		{long, true, false},
	} {
		if got := deny.Passes([]byte(tc.name)); got != tc.deny {
			t.Errorf("denylist passes %s = %v", tc.name, got)
		}
		if got := allow.Passes([]byte(tc.name)); got != tc.allow {
			t.Errorf("allowlist passes %s = %v", tc.name, got)
		}
	}
}

func TestCopyResponseEdits(t *testing.T) {
	var src, dst fasthttp.ResponseHeader
	src.Set("Connection", "X-Listed")
	src.Set("X-Listed", "1")
	src.Set("Location", "/a")
	src.Set("X-Gone", "1")
	src.Set("X-Kept", "1")
	New(Spec{Drop: HopByHop}).CopyResponse(&dst, &src, func(name, v []byte) ([]byte, bool) {
		switch strings.ToLower(string(name)) {
		case "location":
			return append([]byte("/u/x"), v...), true
		case "x-gone":
			return nil, false
		}
		return v, true
	})
	if string(dst.Peek("Location")) != "/u/x/a" || len(dst.Peek("X-Gone")) > 0 || len(dst.Peek("X-Listed")) > 0 ||
		string(dst.Peek("X-Kept")) != "1" {
		t.Errorf("copied as %q", dst.String())
	}
}

// FuzzCopyRequest: whatever header block a client sends, no dropped name,
// no name outside the allowlist and nothing its Connection header lists
// reaches the upstream, in any letter case.
func FuzzCopyRequest(f *testing.F) {
	f.Add("Cookie: a=1\r\nX-Forwarded-For: 1.2.3.4\r\nAccept: */*\r\nConnection: x-a\r\nX-A: 1\r\n")
	f.Add("cOOKIE: a=1\r\nx-FORWARDED-host: h\r\nContent-Type: text/plain\r\n")
	deny := New(Spec{Drop: append([]string{"cookie", "authorization"}, HopByHop...), DropPrefixes: []string{"x-forwarded-"}})
	allow := New(Spec{Allow: []string{"accept"}, Always: []string{"content-type"}})
	f.Fuzz(func(t *testing.T, headers string) {
		var req fasthttp.Request
		raw := "GET / HTTP/1.1\r\nHost: h\r\n" + headers + "\r\n\r\n"
		if req.Read(bufio.NewReader(strings.NewReader(raw))) != nil {
			return
		}
		conn := tokens(req.Header.Peek("Connection"))
		for _, r := range []*Rule{deny, allow} {
			var out fasthttp.RequestHeader
			r.CopyRequest(&out, &req.Header)
			for k := range out.All() {
				name := bytes.ToLower(k)
				if string(name) == "host" {
					continue // fasthttp's own request line header, never copied
				}
				if !r.Passes(name) || listed(conn, name) {
					t.Fatalf("%s passed", k)
				}
			}
			for k := range r.DialHeader(&req.Header) {
				if name := []byte(strings.ToLower(k)); !r.Passes(name) || listed(conn, name) {
					t.Fatalf("%s passed to a dial", k)
				}
			}
		}
	})
}
