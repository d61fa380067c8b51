package nodeproxy

import (
	"net/url"
	"path"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/account"
)

type routeCase struct {
	uri    string
	kind   routeKind
	user   string
	target string
}

func routeCases() []routeCase {
	return []routeCase{
		{"/u/alice/", routeUser, "alice", "/"},
		{"/u/alice/api/echo", routeUser, "alice", "/api/echo"},
		{"/u/alice/api/echo?x=1&y=%2F", routeUser, "alice", "/api/echo?x=1&y=%2F"},
		{"/u/alice/a%20b/c%C3%A9", routeUser, "alice", "/a%20b/c%C3%A9"},
		{"/u/alice/files/a.txt", routeUser, "alice", "/files/a.txt"},
		{"/u/alice/.well-known/x", routeUser, "alice", "/.well-known/x"},
		{"/u/alice/dir/", routeUser, "alice", "/dir/"},
		{"/u/alice/?", routeUser, "alice", "/?"},
		{"/u/alice", routeRedirect, "alice", "/u/alice/"},
		{"/u/alice?next=1", routeRedirect, "alice", "/u/alice/?next=1"},
		// Traversal and smuggling in every spelling: refused outright.
		{"/u/alice/../bob/", routeBadPath, "", ""},
		{"/u/alice/..", routeBadPath, "", ""},
		{"/u/alice/./x", routeBadPath, "", ""},
		{"/u/alice/%2e%2e/bob/", routeBadPath, "", ""},
		{"/u/alice/%2E%2E/bob/", routeBadPath, "", ""},
		{"/u/alice/.%2e/bob/", routeBadPath, "", ""},
		{"/u/alice%2f..%2fbob/", routeBadPath, "", ""},
		{"/u/alice/..%2fbob/", routeBadPath, "", ""},
		{"/u/alice/x%2F..%2F..%2Fbob", routeBadPath, "", ""},
		{"/u/alice/..%5cbob", routeBadPath, "", ""},
		{"/u/alice/%5C..%5Cbob", routeBadPath, "", ""},
		{"/u/alice\\..\\bob/", routeBadPath, "", ""},
		{"/u/alice/..\\bob", routeBadPath, "", ""},
		{"/u/alice//bob/", routeBadPath, "", ""},
		{"/u//bob/", routeBadPath, "", ""},
		{"/u/alice/x//y", routeBadPath, "", ""},
		{"/u/alice/..;/bob/", routeBadPath, "", ""},
		{"/u/alice/%00", routeBadPath, "", ""},
		{"/u/alice/%0d%0aX:1", routeBadPath, "", ""},
		{"/u/alice/%", routeBadPath, "", ""},
		{"/u/alice/%zz", routeBadPath, "", ""},
		{"/u/alice/\xff", routeBadPath, "", ""},
		{"/u/alice/#frag", routeBadPath, "", ""},
		{"/u/alice/?a=\x01", routeBadPath, "", ""},
		// Not a user name: 404, never another user.
		{"/u/", routeNoUser, "", ""},
		{"/u/Alice/", routeNoUser, "", ""},
		{"/u/%61lice/", routeNoUser, "", ""},
		{"/u/admin/", routeNoUser, "", ""},
		{"/u/al.ice/", routeNoUser, "", ""},
		{"/u/alice;bob/", routeNoUser, "", ""},
		// Everything else belongs to the auth API.
		{"/", routeAuthAPI, "", ""},
		{"/login", routeAuthAPI, "", ""},
		{"/u", routeAuthAPI, "", ""},
		{"/U/alice/", routeAuthAPI, "", ""},
		{"//u/alice/", routeAuthAPI, "", ""},
		{"/%75/alice/", routeAuthAPI, "", ""},
		{"/users?x=/u/bob/", routeAuthAPI, "", ""},
		{"http://host/u/alice/", routeBadPath, "", ""},
		{"*", routeBadPath, "", ""},
		{"", routeBadPath, "", ""},
	}
}

func TestParseRoute(t *testing.T) {
	for _, tc := range routeCases() {
		t.Run(tc.uri, func(t *testing.T) {
			r := parseRoute([]byte(tc.uri))
			if r.kind != tc.kind || r.user != tc.user || (tc.target != "" && r.target != tc.target) {
				t.Errorf("parseRoute(%q) = %v %q %q, want %v %q %q", tc.uri, r.kind, r.user, r.target, tc.kind, tc.user, tc.target)
			}
			checkRouteInvariants(t, tc.uri, r)
		})
	}
}

// checkRouteInvariants is the router's contract: a request routed to user
// U, however its path is decoded and cleaned, stays below /u/U/.
func checkRouteInvariants(t *testing.T, uri string, r route) {
	t.Helper()
	switch r.kind {
	case routeUser, routeRedirect:
	default:
		if r.user != "" {
			t.Fatalf("%q: kind %v carries user %q", uri, r.kind, r.user)
		}
		return
	}
	if err := account.ValidateUser(r.user); err != nil {
		t.Fatalf("%q routed to invalid user %q", uri, r.user)
	}
	rawPath, _, _ := strings.Cut(uri, "?")
	prefix := "/u/" + r.user
	if r.kind == routeRedirect {
		if rawPath != prefix || !strings.HasPrefix(r.target, prefix+"/") {
			t.Fatalf("%q: redirect %q for path %q", uri, r.target, rawPath)
		}
		return
	}
	if !strings.HasPrefix(rawPath, prefix+"/") {
		t.Fatalf("%q routed to %q without its prefix", uri, r.user)
	}
	for _, decode := range []func(string) (string, error){url.PathUnescape, doubleUnescape} {
		dec, err := decode(rawPath)
		if err != nil {
			continue // the app could not decode it either
		}
		if strings.ContainsRune(dec, '\\') {
			t.Fatalf("%q: decoded path %q has a backslash", uri, dec)
		}
		clean := path.Clean(dec)
		if clean != prefix && !strings.HasPrefix(clean, prefix+"/") {
			t.Fatalf("%q routed to %q but decodes and cleans to %q", uri, r.user, clean)
		}
		if dec != clean && dec != clean+"/" {
			t.Fatalf("%q: decoded path %q is not clean (%q)", uri, dec, clean)
		}
	}
	wantTarget := rawPath[len(prefix):]
	if q := strings.Index(uri, "?"); q >= 0 {
		wantTarget += uri[q:]
	}
	if r.target != wantTarget {
		t.Fatalf("%q: upstream target %q, want %q", uri, r.target, wantTarget)
	}
}

// doubleUnescape decodes twice, as a confused upstream might; the one
// decoding the router allows must not turn into traversal either way.
func doubleUnescape(s string) (string, error) {
	once, err := url.PathUnescape(s)
	if err != nil {
		return "", err
	}
	if strings.Contains(once, "%2") || strings.Contains(once, "%5") {
		// A double-encoded '.', '/' or '\\' only reaches the app as a
		// literal "%2e": cleaning does not act on it.
		return once, nil
	}
	return url.PathUnescape(once)
}

func FuzzRoute(f *testing.F) {
	for _, tc := range routeCases() {
		f.Add(tc.uri)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		checkRouteInvariants(t, uri, parseRoute([]byte(uri)))
	})
}

func TestParseOriginRoute(t *testing.T) {
	const origin = "https://alice.u.example.test"
	for _, tt := range []struct {
		uri    string
		kind   routeKind
		target string
	}{
		{"/", routeUser, "/"},
		{"/api/echo?x=1", routeUser, "/api/echo?x=1"},
		{"/u/bob/", routeUser, "/u/bob/"},
		{"/_sandgate/enter?code=c&next=/", routeEnter, "/_sandgate/enter?code=c&next=/"},
		{"/_sandgate/enter/", routeUser, "/_sandgate/enter/"},
		{"/a/../_sandgate/enter", routeBadPath, ""},
		{"/a/%2e%2e/b", routeBadPath, ""},
		{"//evil.test/", routeBadPath, ""},
		{"/a\\b", routeBadPath, ""},
		{"*", routeBadPath, ""},
		{"http://alice.u.example.test/", routeBadPath, ""},
	} {
		r := parseOriginRoute([]byte(tt.uri), "alice", origin)
		if r.kind != tt.kind || (tt.target != "" && (r.target != tt.target || r.user != "alice" || r.origin != origin || r.prefix() != "")) {
			t.Errorf("parseOriginRoute(%q) = %+v, want %v with target %q", tt.uri, r, tt.kind, tt.target)
		}
	}
}

func FuzzOriginRoute(f *testing.F) {
	for _, s := range []string{"/", "/api/x?y", "/_sandgate/enter?code=x", "/../", "//x", "/%2f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		r := parseOriginRoute([]byte(uri), "alice", "https://alice.u.example.test")
		if r.kind != routeUser && r.kind != routeEnter {
			return
		}
		path, _, _ := strings.Cut(r.target, "?")
		if r.target != uri || r.user != "alice" || !strings.HasPrefix(path, "/") || strings.HasPrefix(path, "//") ||
			strings.Contains(path, "/../") || strings.HasSuffix(path, "/..") || strings.Contains(strings.ToLower(path), "%2f") {
			t.Fatalf("parseOriginRoute(%q) = %+v", uri, r)
		}
	})
}
