package clusterinstall

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/certs"
)

// writeCertificate writes a CA (ca.crt) and a serving certificate signed by
// it for hosts (tls.crt, tls.key) into dir, and returns the CA's path.
func writeCertificate(dir string, hosts []string) (string, error) {
	ca, err := certs.NewCA("sandgate local cluster CA", 30*24*time.Hour)
	if err != nil {
		return "", err
	}
	cert, key, err := ca.Issue(certs.Server("sandgate node proxy", hosts...))
	if err != nil {
		return "", err
	}
	for name, data := range map[string][]byte{"ca.crt": ca.PEM, "tls.crt": cert, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return "", fmt.Errorf("write %s: %w", name, err)
		}
	}
	return filepath.Join(dir, "ca.crt"), nil
}
