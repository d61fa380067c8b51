package controlplane

import (
	"fmt"
	"os"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/sandgate/sandgate/internal/clustertools/certs"
)

// WriteKubeconfig writes a kubeconfig file at path whose user is a client
// certificate this control plane's CA issues for cn in the groups orgs:
// "system:node:<name>" in "system:nodes" for a kubelet,
// "system:kube-proxy" for kube-proxy, and so on.
func (c *ControlPlane) WriteKubeconfig(path, cn string, orgs ...string) error {
	cert, key, err := c.pki.ca.Issue(certs.Client(cn, orgs...))
	if err != nil {
		return err
	}
	return writeKubeconfig(path, c.url, c.pki.ca.PEM, cert, key)
}

// WriteAdminKubeconfig writes a cluster-admin kubeconfig file at path.
func (c *ControlPlane) WriteAdminKubeconfig(path string) error {
	return writeKubeconfig(path, c.url, c.pki.ca.PEM, c.pki.adminCert, c.pki.adminKey)
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
