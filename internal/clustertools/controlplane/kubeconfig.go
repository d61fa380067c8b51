package controlplane

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"os"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes a kubeconfig file at path whose user is a client
// certificate this control plane's CA issues for cn in the groups orgs:
// "system:node:<name>" in "system:nodes" for a kubelet,
// "system:kube-proxy" for kube-proxy, and so on.
func (c *ControlPlane) WriteKubeconfig(path, cn string, orgs ...string) error {
	cert, key, err := c.pki.client(cn, orgs...)
	if err != nil {
		return err
	}
	return writeKubeconfig(path, c.url, c.pki.caCert, cert, key)
}

// client issues a client certificate for cn in the groups orgs.
func (p *pki) client(cn string, orgs ...string) (certPEM, keyPEM []byte, err error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, fmt.Errorf("pick a serial for %s: %w", cn, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: orgs},
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return issue(p.ca, p.caKey, tmpl)
}

// WriteAdminKubeconfig writes a cluster-admin kubeconfig file at path.
func (c *ControlPlane) WriteAdminKubeconfig(path string) error {
	return writeKubeconfig(path, c.url, c.pki.caCert, c.pki.adminCert, c.pki.adminKey)
}

// CAPath is the file holding the CA certificate of the API server and of
// every client certificate it accepts.
func (c *ControlPlane) CAPath() string { return c.pki.caPath }

// ServiceAccountKeyPath is the file holding the key that signs
// ServiceAccount tokens, which the controller manager needs too.
func (c *ControlPlane) ServiceAccountKeyPath() string { return c.pki.saKeyPath }

func writeKubeconfig(path, server string, ca, cert, key []byte) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["sandgate"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts["sandgate"] = &clientcmdapi.Context{Cluster: "sandgate", AuthInfo: "user"}
	cfg.CurrentContext = "sandgate"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encode kubeconfig %s: %w", path, err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}
