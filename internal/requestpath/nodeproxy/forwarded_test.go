package nodeproxy

import (
	"maps"
	"net/netip"
	"testing"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestForwardedForOnlyFromTrustedPeers: an X-Forwarded-For reaches the
// auth API and the app, and names the client in the access log, only when
// a trusted proxy sent it; a client's own is replaced by its address, so
// it cannot pick the address the auth API rate-limits or an app logs. The
// hop header earns no trust outside /u/.
func TestForwardedForOnlyFromTrustedPeers(t *testing.T) {
	const forged = "198.51.100.66"
	for _, tc := range []struct {
		name       string
		trusted    bool
		hdr        map[string]string
		wantXFF    string
		wantClient string
	}{
		{"untrusted client", false, map[string]string{"X-Forwarded-For": forged}, "127.0.0.1", "127.0.0.1"},
		{"untrusted client, two lines", false, map[string]string{"X-Forwarded-For": forged + ", 10.0.0.1"}, "127.0.0.1", "127.0.0.1"},
		{"untrusted client claiming a hop", false, map[string]string{"X-Forwarded-For": forged, "X-Sandgate-Hop": "node-b"}, "127.0.0.1", "127.0.0.1"},
		{"trusted proxy", true, map[string]string{"X-Forwarded-For": forged}, forged + ", 127.0.0.1", forged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{modify: func(o *Options) {
				if tc.trusted {
					o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
				}
			}})
			h.addUser("alice", "node-a")
			hdr := map[string]string{"Authorization": "Bearer tok-alice"}
			maps.Copy(hdr, tc.hdr)

			readAll(t, h.get("node-a", "/login", hdr))
			if got := h.auth.seen.Last().Header.Get("X-Forwarded-For"); got != tc.wantXFF {
				t.Errorf("auth API saw X-Forwarded-For %q, want %q", got, tc.wantXFF)
			}
			if tc.hdr["X-Sandgate-Hop"] == "" { // the harness client's address is a node's
				e := echo(t, h.get("node-a", "/u/alice/api/echo", hdr))
				if got := e.Headers.Get("X-Forwarded-For"); got != tc.wantXFF {
					t.Errorf("app saw X-Forwarded-For %q, want %q", got, tc.wantXFF)
				}
			}
			testkit.Eventually(t, "access lines", func() bool { return len(accessLines(t, h.logs)) >= 1 })
			for _, l := range accessLines(t, h.logs) {
				if l["client"] != tc.wantClient {
					t.Errorf("access log client %v for %v, want %s", l["client"], l["path"], tc.wantClient)
				}
			}
		})
	}
}
