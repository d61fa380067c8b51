package certs_test

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/certs"
)

// TestIssuedCertificatesVerify: what the CA issues verifies against its
// PEM for the use and the names asked for, and for nothing else.
func TestIssuedCertificatesVerify(t *testing.T) {
	ca, err := certs.NewCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca.PEM) {
		t.Fatal("the CA's PEM holds no certificate")
	}
	for _, tc := range []struct {
		name  string
		tmpl  *x509.Certificate
		usage x509.ExtKeyUsage
		host  string
		ok    bool
	}{
		{"server for its IP", certs.Server("proxy", "10.0.0.2", "localhost"), x509.ExtKeyUsageServerAuth, "10.0.0.2", true},
		{"server for its DNS name", certs.Server("proxy", "10.0.0.2", "localhost"), x509.ExtKeyUsageServerAuth, "localhost", true},
		{"server for another host", certs.Server("proxy", "10.0.0.2"), x509.ExtKeyUsageServerAuth, "10.0.0.3", false},
		{"server used as a client", certs.Server("proxy", "10.0.0.2"), x509.ExtKeyUsageClientAuth, "", false},
		{"client", certs.Client("system:node:n1", "system:nodes"), x509.ExtKeyUsageClientAuth, "", true},
		{"client used as a server", certs.Client("admin"), x509.ExtKeyUsageServerAuth, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			certPEM, keyPEM, err := ca.Issue(tc.tmpl)
			if err != nil {
				t.Fatal(err)
			}
			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				t.Fatalf("the key does not match the certificate: %v", err)
			}
			_, err = pair.Leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: tc.host, KeyUsages: []x509.ExtKeyUsage{tc.usage}})
			if (err == nil) != tc.ok {
				t.Fatalf("verify: %v, want ok %v", err, tc.ok)
			}
			if tc.ok && pair.Leaf.NotAfter.After(time.Now().Add(time.Hour)) {
				t.Errorf("valid until %v, past the CA's end", pair.Leaf.NotAfter)
			}
		})
	}
}
