package controlplane

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/certs"
)

// pki holds the certificates and keys one control plane uses, as PEM.
type pki struct {
	ca                      *certs.CA
	adminCert, adminKey     []byte
	caPath, servingCertPath string
	servingKeyPath          string
	saKeyPath, saPubPath    string
}

// newPKI creates the CA, the API server's serving certificate (valid for
// loopback, servingIPs and the in-cluster names), the admin client
// certificate and the ServiceAccount signing key under dir.
func newPKI(dir string, servingIPs []net.IP) (*pki, error) {
	ca, err := certs.NewCA("sandgate-test-ca", 7*24*time.Hour)
	if err != nil {
		return nil, err
	}
	p := &pki{ca: ca}
	hosts := []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "127.0.0.1"}
	for _, ip := range servingIPs {
		hosts = append(hosts, ip.String())
	}
	servingCert, servingKey, err := ca.Issue(certs.Server("kube-apiserver", hosts...))
	if err != nil {
		return nil, err
	}
	if p.adminCert, p.adminKey, err = ca.Issue(certs.Client("sandgate-admin", "system:masters")); err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate service account key: %w", err)
	}
	saKeyPEM, err := certs.KeyPEM(saKey)
	if err != nil {
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("marshal service account public key: %w", err)
	}

	p.caPath = filepath.Join(dir, "ca.crt")
	p.servingCertPath = filepath.Join(dir, "apiserver.crt")
	p.servingKeyPath = filepath.Join(dir, "apiserver.key")
	p.saKeyPath = filepath.Join(dir, "sa.key")
	p.saPubPath = filepath.Join(dir, "sa.pub")
	for path, data := range map[string][]byte{
		p.caPath: ca.PEM, p.servingCertPath: servingCert, p.servingKeyPath: servingKey,
		p.saKeyPath: saKeyPEM, p.saPubPath: certs.Block("PUBLIC KEY", pubDER),
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", filepath.Base(path), err)
		}
	}
	return p, nil
}
