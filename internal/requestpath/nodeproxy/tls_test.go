package nodeproxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/certs"
	"github.com/sandgate/sandgate/internal/testing/logbuf"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestTLSListener: the HTTPS listener serves the same proxy as the plain
// one, its requests reach the app (directly and through a hop) and the auth
// API as X-Forwarded-Proto https, and a certificate replaced on disk is
// served from the next check on, while a broken replacement is logged and
// the last good pair kept.
func TestTLSListener(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	first := ca.issue(t, certFile, keyFile)
	clk := testkit.NewOffsetClock()
	logs := &logbuf.Buffer{}
	cert, err := NewCertificate(CertificateOptions{
		CertFile: certFile, KeyFile: keyFile, Now: clk.Now, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{peers: true, tls: cert.TLSConfig()})
	h.dir.mu.Lock()
	h.dir.nodeIPs[nodeIPs["node-a"]] = true // node-a's hops come from its node IP
	h.dir.mu.Unlock()
	h.addUser("alice", "node-a")
	h.addUser("carol", "node-b")
	client := ca.client(t)

	for user, via := range map[string]string{"alice": "the pod's node", "carol": "a hop to node-b"} {
		hdr := map[string]string{"Cookie": cookie(h.session(user))}
		resp := h.doTLS(client, http.MethodGet, "node-a", "/u/"+user+"/api/echo", hdr)
		if got := echo(t, resp).Headers.Get("X-Forwarded-Proto"); got != "https" {
			t.Errorf("HTTPS through %s: app saw X-Forwarded-Proto %q", via, got)
		}
		if got := echo(t, h.get("node-a", "/u/"+user+"/api/echo", hdr)).Headers.Get("X-Forwarded-Proto"); got != "http" {
			t.Errorf("plain HTTP through %s: app saw X-Forwarded-Proto %q", via, got)
		}
	}
	resp := h.doTLS(client, http.MethodGet, "node-a", "/login", nil)
	readAll(t, resp)
	if got := h.auth.seen.Last().Header.Get("X-Forwarded-Proto"); resp.StatusCode != 200 || got != "https" {
		t.Errorf("auth API over HTTPS: status %d, X-Forwarded-Proto %q", resp.StatusCode, got)
	}
	if got := servedSerial(t, resp); got.Cmp(first) != 0 {
		t.Fatalf("served certificate %v, want %v", got, first)
	}

	served := func() *big.Int {
		resp := h.doTLS(client, http.MethodGet, "node-a", "/", nil)
		readAll(t, resp)
		return servedSerial(t, resp)
	}
	second := ca.issue(t, certFile, keyFile)
	if got := served(); got.Cmp(first) != 0 {
		t.Errorf("certificate %v served before the check interval passed, want still %v", got, first)
	}
	clk.Advance(DefaultCertCheckInterval)
	if got := served(); got.Cmp(second) != 0 {
		t.Errorf("after rotation served %v, want %v", got, second)
	}

	writeNewKey(t, keyFile) // no longer the certificate's key
	clk.Advance(DefaultCertCheckInterval)
	if got := served(); got.Cmp(second) != 0 {
		t.Errorf("after a bad pair served %v, want the last good %v", got, second)
	}
	if !strings.Contains(logs.String(), "do not load; keeping the loaded certificate") {
		t.Errorf("bad pair not logged:\n%s", logs)
	}
}

// TestCertificateRefusesBadPairs: NewCertificate names the files and the
// reason when the pair cannot serve.
func TestCertificateRefusesBadPairs(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	ca.issue(t, certFile, keyFile)
	otherKey := filepath.Join(dir, "other.key")
	writeNewKey(t, otherKey)
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, cert, key, want string
	}{
		{"key of another certificate", certFile, otherKey, "private key does not match public key"},
		{"missing key", certFile, filepath.Join(dir, "missing.key"), "missing.key"},
		{"not PEM", notPEM, keyFile, "failed to find any PEM data"},
		{"no key file", certFile, "", "both required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCertificate(CertificateOptions{CertFile: tc.cert, KeyFile: tc.key})
			if err == nil || c != nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewCertificate = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestServeAllStopsWithAListener: when one listener fails, ServeAll shuts
// the others down and returns the error.
func TestServeAllStopsWithAListener(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	o := h.nodes["node-a"].proxy.opts
	o.Registerer, o.Gatherer = nil, nil
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	a, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.ServeAll(context.Background(), Listener{Listener: a}, Listener{Listener: b}) }()
	a.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Errorf("ServeAll = %v, want the closed listener's error", err)
	}
	if c, err := net.Dial("tcp", b.Addr().String()); err == nil {
		c.Close()
		t.Error("the other listener still accepts")
	}
}

// doTLS is h.do over HTTPS to node's TLS listener.
func (h *harness) doTLS(client *http.Client, method, nodeName, path string, hdr map[string]string) *http.Response {
	h.t.Helper()
	return h.send(client, testkit.Request{Method: method, URL: "https://" + h.nodes[nodeName].tlsAddr + path, Header: hdr})
}

// servedSerial is the serial number of the certificate the server showed.
func servedSerial(t *testing.T, resp *http.Response) *big.Int {
	t.Helper()
	if resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
		t.Fatal("response not over TLS")
	}
	return resp.TLS.PeerCertificates[0].SerialNumber
}

// testCA issues the node proxy's certificates in tests.
type testCA struct{ *certs.CA }

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	ca, err := certs.NewCA("sandgate test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{ca}
}

// issue writes a new certificate for the harness's node IPs and its key,
// each renamed over the old file as the kubelet swaps a Secret volume's
// files, and returns its serial number.
func (ca *testCA) issue(t *testing.T, certFile, keyFile string) *big.Int {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue(certs.Server("nodeproxy", nodeIPs["node-a"], nodeIPs["node-b"]))
	if err != nil {
		t.Fatal(err)
	}
	replaceFile(t, certFile, certPEM)
	replaceFile(t, keyFile, keyPEM)
	block, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert.SerialNumber
}

// client trusts only the CA and opens a connection (a handshake) per
// request.
func (ca *testCA) client(t *testing.T) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.PEM)
	c := &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, DisableKeepAlives: true},
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// writeNewKey writes a key that no certificate has to name.
func writeNewKey(t *testing.T, name string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := certs.KeyPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	replaceFile(t, name, keyPEM)
}

// replaceFile puts data at name in one rename.
func replaceFile(t *testing.T, name string, data []byte) {
	t.Helper()
	tmp := name + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, name); err != nil {
		t.Fatal(err)
	}
}
