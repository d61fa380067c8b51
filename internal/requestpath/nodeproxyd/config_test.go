package nodeproxyd

import (
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/certs"
	"github.com/sandgate/sandgate/internal/settings"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// validated loads the settings base with extra over it and returns them
// with what Validate says of them.
func validated(t *testing.T, base, extra map[string]string) (Config, error) {
	t.Helper()
	e := maps.Clone(base)
	maps.Copy(e, extra)
	c := testkit.Loaded(t, Load, nil, e)
	return c, c.Validate()
}

// validOrRefused validates base with extra over it for a table case that
// either passes or, when wantErr is set, is refused with an error naming
// it; it fails the test otherwise and reports whether the settings passed.
func validOrRefused(t *testing.T, base, extra map[string]string, wantErr string) (Config, bool) {
	t.Helper()
	c, err := validated(t, base, extra)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("validate() = %v, want %q", err, wantErr)
		}
		return c, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return c, true
}

func TestEnvThenFlags(t *testing.T) {
	c := testkit.Loaded(t, Load, []string{"--max-body-mb", "7", "--write-timeout=90"}, map[string]string{
		"NODE_NAME": "n1", "MAX_BODY_MB": "3", "MAX_IN_FLIGHT_PER_USER": "5", "COOKIE_SECURE": "false",
		"ALLOW_INSECURE_COOKIES": "1", "UPSTREAM_HEADER_ALLOWLIST": "Accept, X-Custom", "LISTEN_ADDR": ":8443",
	})
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.AccessLogSummary != DefaultAccessLogSummary || c.proxyOptions().AccessLogSummary != DefaultAccessLogSummary {
		t.Errorf("access log summary %v, passed on as %v, want %v", c.AccessLogSummary, c.proxyOptions().AccessLogSummary, DefaultAccessLogSummary)
	}
	if c.NodeName != "n1" || c.MaxBodyMB != 7 || c.MaxInFlightPerUser != 5 || c.CookieSecure || c.WriteTimeout != 90*time.Second {
		t.Errorf("config %+v", c)
	}
	if got := settings.SplitList(c.HeaderAllowlist); len(got) != 2 || got[1] != "X-Custom" {
		t.Errorf("allowlist %q", got)
	}
	if c.peerPort() != 8443 || c.jwksURL() != "http://authapi.sandgate.svc:8080/.well-known/jwks.json" {
		t.Errorf("peer port %d JWKS %q", c.peerPort(), c.jwksURL())
	}
}

func TestValidateReportsEverything(t *testing.T) {
	c := testkit.Loaded(t, Load, nil, map[string]string{
		"MAX_BODY_MB": "lots", "COOKIE_SECURE": "false", "TRUSTED_PROXIES": "10.0.0.0/8,nope", "LOG_LEVEL": "loud",
		"WS_MAX_MESSAGE_BYTES": "0", "LISTEN_ADDR": "8080", "JWKS_URL": "ftp://x", "ACCESS_LOG_SUMMARY": "-1s",
		"DRAIN_DELAY": "-5", "CLAIM_PREFIX": "7dsh-", "AUTHAPI_URL": "http://authapi.test/base",
		"UPSTREAM_HEADER_ALLOWLIST": "Accept,Cookie", "AUTH_PROXY_HEADER": "Connection", "PEER_PORT": "70000",
		"COOKIE_NAME": "bad name",
	})
	err := c.Validate()
	for _, want := range []string{`AUTHAPI_URL "http://authapi.test/base" must be http(s)://host[:port]`,
		`UPSTREAM_HEADER_ALLOWLIST: header "Cookie" can never be forwarded`, `AUTH_PROXY_HEADER "Connection"`,
		"PEER_PORT 70000", `COOKIE_NAME/ORIGIN_COOKIE_NAME: cookie name "bad name"`, `MAX_BODY_MB="lots"`, "ALLOW_INSECURE_COOKIES", "NODE_NAME must not be empty", `"nope"`,
		"LOG_LEVEL", "WS_MAX_MESSAGE_BYTES 0", "LISTEN_ADDR", "JWKS_URL", "ACCESS_LOG_SUMMARY -1s", "DRAIN_DELAY -5s", `CLAIM_PREFIX: claim prefix "7dsh-"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate() = %v, want %q", err, want)
		}
	}
}

// TestTLSSettings: HTTPS needs both files, a pair that loads and a
// listener of its own; without the files it is off.
func TestTLSSettings(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, otherKey := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "other.key")
	writePair(t, certFile, keyFile)
	writePair(t, filepath.Join(dir, "other.crt"), otherKey)
	base := map[string]string{"NODE_NAME": "n1"}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // "" means valid
	}{
		{"off", nil, ""},
		{"on", map[string]string{"TLS_CERT_FILE": certFile, "TLS_KEY_FILE": keyFile}, ""},
		{"cert only", map[string]string{"TLS_CERT_FILE": certFile}, "TLS_CERT_FILE and TLS_KEY_FILE must be set together"},
		{"key only", map[string]string{"TLS_KEY_FILE": keyFile}, "must be set together"},
		{"key of another certificate", map[string]string{"TLS_CERT_FILE": certFile, "TLS_KEY_FILE": otherKey}, "private key does not match public key"},
		{"missing file", map[string]string{"TLS_CERT_FILE": certFile, "TLS_KEY_FILE": filepath.Join(dir, "gone.key")}, "gone.key"},
		{"same listener", map[string]string{"TLS_CERT_FILE": certFile, "TLS_KEY_FILE": keyFile, "TLS_LISTEN_ADDR": ":8080"}, "TLS_LISTEN_ADDR \":8080\" must differ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if c, ok := validOrRefused(t, base, tc.env, tc.want); ok && c.tlsEnabled() != (tc.env != nil) {
				t.Errorf("tlsEnabled() = %v", c.tlsEnabled())
			}
		})
	}
	if d := Defaults(); d.TLSListenAddr != ":8443" {
		t.Errorf("TLS_LISTEN_ADDR defaults to %q", d.TLSListenAddr)
	}
}

// TestListen: the HTTPS listener is bound only with a certificate, and
// carries it.
func TestListen(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writePair(t, certFile, keyFile)
	c := Defaults()
	c.ListenAddr, c.OpsAddr, c.TLSListenAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name       string
		cert, key  string
		listeners  int
		wantErrHas string
	}{
		{"plain", "", "", 1, ""},
		{"https", certFile, keyFile, 2, ""},
		{"broken pair", certFile, certFile, 0, "load TLS certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.TLSCertFile, c.TLSKeyFile = tc.cert, tc.key
			d := &Daemon{cfg: c, log: log}
			err := d.listen(nil)
			if tc.wantErrHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrHas) {
					t.Errorf("listen() = %v, want %q", err, tc.wantErrHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d.Close()
			lns := d.lns
			if len(lns) != tc.listeners || lns[0].TLS != nil || (len(lns) == 2 && lns[1].TLS == nil) {
				t.Errorf("listeners %+v", lns)
			}
		})
	}
}

// writePair writes a certificate for node.test and its key.
func writePair(t *testing.T, certFile, keyFile string) {
	t.Helper()
	ca, err := certs.NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.Issue(certs.Server("node.test", "node.test"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSubdomainSettings: subdomain routing needs a user domain and a main
// origin outside it; a main host that is a user's origin is refused with
// the other settings, before anything is assembled.
func TestSubdomainSettings(t *testing.T) {
	base := map[string]string{"NODE_NAME": "n1", "ROUTING_MODE": "subdomain", "USER_DOMAIN": "users.example.com"}
	for _, tc := range []struct {
		origin, wantErr string
	}{
		{"https://sandgate.example.com", ""},
		{"https://a.b.users.example.com", ""},
		{"https://alice.users.example.com", `PUBLIC_ORIGIN: main host "alice.users.example.com" is the origin of user "alice"`},
		{"sandgate.example.com", "PUBLIC_ORIGIN"},
	} {
		t.Run(tc.origin, func(t *testing.T) {
			validOrRefused(t, base, map[string]string{"PUBLIC_ORIGIN": tc.origin}, tc.wantErr)
		})
	}
}
