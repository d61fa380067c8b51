package nodeproxy

import (
	"net/http"
	"net/url"
	"path"
	"strings"
	"testing"
)

// internalCases are raw request paths and whether a router that decodes
// and cleans them could reach the auth API's internal endpoints.
var internalCases = []struct {
	raw      string
	internal bool
}{
	{"/internal/v1/wake", true},
	{"/internal", true},
	{"/%69nternal/v1/wake", true},
	{"/%49NTERNAL/v1/wake", true},
	{"/Internal/v1/wake", true},
	{"/%2Finternal/v1/wake", true},
	{"/%2finternal/v1/wake", true},
	{"//internal/v1/wake", true},
	{"/./internal/v1/wake", true},
	{"/%2e/internal/v1/wake", true},
	{"/%2E%2E/internal/v1/wake", true},
	{"/u/../internal/v1/wake", true},
	{"/U/%2e%2e/internal/v1/wake", true},
	{"/x/..%2finternal/v1/wake", true},
	{`/\internal/v1/wake`, true},
	{"/%5Cinternal/v1/wake", true},
	{"/internal;x/v1/wake", true},
	{"/%2569nternal/v1/wake", true},
	{"/%252569nternal/v1/wake", true},
	{"/%zz/internal", true},
	{"/", false},
	{"/login", false},
	{"/internals", false},
	{"/internal-docs", false},
	{"/login/internal/v1", false},
	{"/u/alice/internal/v1/wake", false},
	{"/static/100%25", false},
}

func TestIsInternal(t *testing.T) {
	for _, tt := range internalCases {
		if got := isInternal(tt.raw); got != tt.internal {
			t.Errorf("isInternal(%q) = %v, want %v", tt.raw, got, tt.internal)
		}
	}
}

// FuzzIsInternal checks that no request target that net/http's router
// would decode and clean into /internal/... is let through: the handler
// asks isInternal about the path parseRoute cuts from the target.
func FuzzIsInternal(f *testing.F) {
	for _, tt := range internalCases {
		f.Add(tt.raw)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.ParseRequestURI(raw)
		if r := parseRoute([]byte(raw)); err != nil || r.kind != routeAuthAPI || isInternal(r.path) {
			return
		}
		if p := path.Clean("/" + u.Path); p == "/internal" || strings.HasPrefix(p, "/internal/") {
			t.Errorf("isInternal(%q) = false, but the router reads %q", raw, p)
		}
	})
}

func TestInternalPathsNotForwarded(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for _, tt := range internalCases {
		if !tt.internal || strings.ContainsAny(tt.raw, `\`) {
			continue
		}
		raw := "POST " + tt.raw + " HTTP/1.1\r\nHost: " + testHost + "\r\nAuthorization: Bearer x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
		if got := h.rawRequest("node-a", raw); !strings.HasPrefix(got, "HTTP/1.1 404") && !strings.HasPrefix(got, "HTTP/1.1 400") {
			t.Errorf("POST %s: %q, want 404 (or 400) from the node proxy", tt.raw, got)
		}
	}
	if n := h.auth.wakes.Load(); n != 0 {
		t.Errorf("the auth API's wake endpoint was called %d times from outside", n)
	}
	if seen := h.auth.seen.Last(); seen.Method != "" {
		t.Errorf("the auth API saw %s %s", seen.Method, seen.Path)
	}
	resp := h.do(http.MethodGet, "node-a", "/login", nil, nil)
	readAll(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/login: %d", resp.StatusCode)
	}
}
