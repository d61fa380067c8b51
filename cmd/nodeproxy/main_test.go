package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/settings"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, env(nil), &out, &errOut); code != 0 {
		t.Fatalf("--help exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"Usage: nodeproxy", "--node-name [NODE_NAME]", "--max-body-mb [MAX_BODY_MB]",
		"[MAX_IN_FLIGHT_PER_USER]", "[WS_MAX_MESSAGE_BYTES]", "[UPSTREAM_HEADER_ALLOWLIST]", "[DSH_LOG_TAIL_LINES]",
		"[COOKIE_SECURE]", "[COOKIE_NAME]", "[AUTHAPI_URL]", "[JWKS_URL]", "[LOG_ROOT]",
		"--tls-cert-file [TLS_CERT_FILE]", "[TLS_KEY_FILE]", "[TLS_LISTEN_ADDR]",
		"--token-source [TOKEN_SOURCE]", "--token-pattern [TOKEN_PATTERN]", "[TOKEN_STREAM]", "[KUBELET_PODS_DIR]", "[TOKEN_FILE]"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func TestEnvThenFlags(t *testing.T) {
	c, err := load([]string{"--max-body-mb", "7", "--write-timeout=90"}, env(map[string]string{
		"NODE_NAME": "n1", "MAX_BODY_MB": "3", "MAX_IN_FLIGHT_PER_USER": "5", "COOKIE_SECURE": "false",
		"ALLOW_INSECURE_COOKIES": "1", "UPSTREAM_HEADER_ALLOWLIST": "Accept, X-Custom", "LISTEN_ADDR": ":8443",
	}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.validate(); err != nil {
		t.Fatal(err)
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
	c, err := load(nil, env(map[string]string{
		"MAX_BODY_MB": "lots", "COOKIE_SECURE": "false", "TRUSTED_PROXIES": "10.0.0.0/8,nope", "LOG_LEVEL": "loud",
		"WS_MAX_MESSAGE_BYTES": "0", "LISTEN_ADDR": "8080", "JWKS_URL": "ftp://x",
	}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	err = c.validate()
	for _, want := range []string{`MAX_BODY_MB="lots"`, "ALLOW_INSECURE_COOKIES", "NODE_NAME must not be empty", `"nope"`,
		"LOG_LEVEL", "WS_MAX_MESSAGE_BYTES 0", "LISTEN_ADDR", "JWKS_URL"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate() = %v, want %q", err, want)
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), nil, env(nil), &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "NODE_NAME") {
		t.Errorf("run without NODE_NAME: exit %d, %q", code, errOut.String())
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
			e := maps.Clone(base)
			maps.Copy(e, tc.env)
			c, err := load(nil, env(e), &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			err = c.validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("validate() = %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("validate() = %v, want %q", err, tc.want)
			}
			if tc.want == "" && c.tlsEnabled() != (tc.env != nil) {
				t.Errorf("tlsEnabled() = %v", c.tlsEnabled())
			}
		})
	}
	if d := defaults(); d.TLSListenAddr != ":8443" {
		t.Errorf("TLS_LISTEN_ADDR defaults to %q", d.TLSListenAddr)
	}
}

// TestListen: the HTTPS listener is bound only with a certificate, and
// carries it.
func TestListen(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writePair(t, certFile, keyFile)
	c := defaults()
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
			lns, ops, err := listen(c, log)
			if tc.wantErrHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErrHas) {
					t.Errorf("listen() = %v, want %q", err, tc.wantErrHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			ops.Close()
			for _, l := range lns {
				l.Close()
			}
			if len(lns) != tc.listeners || lns[0].TLS != nil || (len(lns) == 2 && lns[1].TLS == nil) {
				t.Errorf("listeners %+v", lns)
			}
		})
	}
}

// writePair writes a self-signed certificate and its key.
func writePair(t *testing.T, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), DNSNames: []string{"node.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(name, pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
