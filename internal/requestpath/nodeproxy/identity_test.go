package nodeproxy

import (
	"net/http"
	"net/netip"
	"testing"
)

func TestAuthProxyHeaderOnlyFromTrustedProxies(t *testing.T) {
	for _, tt := range []struct {
		name    string
		trusted bool
		header  string
		kept    bool
	}{
		{"configured name from a client", false, "Remote-User", false},
		{"configured name, other case, from a client", false, "REMOTE-USER", false},
		{"common SSO name from a client", false, "Remote-Email", false},
		{"oauth2-proxy name from a client", false, "X-Forwarded-Email", false},
		{"configured name from a trusted proxy", true, "Remote-User", true},
		{"unrelated header from a client", false, "X-Custom", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{modify: func(o *Options) {
				o.AuthProxyHeader = "Remote-User"
				if tt.trusted {
					o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
				}
			}})
			resp := h.do(http.MethodPost, "node-a", "/signup", nil, map[string]string{tt.header: "alice"})
			readAll(t, resp)
			got := h.auth.seen.Last().Header.Values(tt.header)
			if kept := len(got) > 0; kept != tt.kept {
				t.Errorf("auth API saw %s: %q, want kept=%v", tt.header, got, tt.kept)
			}
		})
	}
}

// TestAuthProxyHeaderNeverReachesApps: the configured AuthProxyHeader,
// whatever its name (a well-known SSO prefix or a custom X-User), never
// reaches an app, even from a trusted proxy, on the pod's node or through
// a hop; another custom header does.
func TestAuthProxyHeaderNeverReachesApps(t *testing.T) {
	for _, configured := range []string{"Remote-User", "X-User"} {
		t.Run(configured, func(t *testing.T) {
			h := newHarness(t, harnessOpts{peers: true, modify: func(o *Options) {
				o.AuthProxyHeader = configured
				o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
			}})
			h.addUser("alice", "node-a")
			for _, node := range []string{"node-a", "node-b"} {
				e := echo(t, h.get(node, "/u/alice/api/echo", map[string]string{
					"Cookie": cookie(h.session("alice")), configured: "bob", "Remote-Groups": "admin", "X-Custom": "kept",
				}))
				for _, name := range []string{configured, "Remote-Groups"} {
					if v := e.Headers.Values(name); len(v) != 0 {
						t.Errorf("via %s: the app saw %s: %q", node, name, v)
					}
				}
				if v := e.Headers.Get("X-Custom"); v != "kept" {
					t.Errorf("via %s: X-Custom %q, want it forwarded", node, v)
				}
			}
		})
	}
}
