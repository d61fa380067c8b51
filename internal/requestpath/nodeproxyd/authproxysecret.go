package nodeproxyd

import (
	"bytes"
	"fmt"
	"os"

	"github.com/sandgate/sandgate/internal/requestpath/nodeproxy"
)

// authProxySecret reads AUTH_PROXY_SECRET_FILE once, at start: the
// password the SSO proxy proves on every request. Surrounding whitespace
// (a trailing newline) is not part of it. Nil when the file is not set.
func (c Config) authProxySecret() ([]byte, error) {
	if c.AuthProxySecretFile == "" {
		return nil, nil
	}
	data, err := os.ReadFile(c.AuthProxySecretFile)
	if err != nil {
		return nil, fmt.Errorf("AUTH_PROXY_SECRET_FILE: read the SSO proxy's secret: %w", err)
	}
	secret := bytes.TrimSpace(data)
	if len(secret) < nodeproxy.MinAuthProxySecretBytes {
		return nil, fmt.Errorf("AUTH_PROXY_SECRET_FILE %s: secret of %d bytes, want at least %d", c.AuthProxySecretFile, len(secret), nodeproxy.MinAuthProxySecretBytes)
	}
	return secret, nil
}
