package nodeproxyd

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"

	"github.com/sandgate/sandgate/internal/requestpath/nodeproxy"
)

// hopKey reads HOP_KEY_FILE once, at start: the key all node proxies share
// to authenticate hops. Surrounding whitespace (a trailing newline) is not
// part of it. Nil when the file is not set.
func (c Config) hopKey() ([]byte, error) {
	if c.HopKeyFile == "" {
		return nil, nil
	}
	data, err := os.ReadFile(c.HopKeyFile)
	if err != nil {
		return nil, fmt.Errorf("HOP_KEY_FILE: read hop key: %w", err)
	}
	key := bytes.TrimSpace(data)
	if len(key) < nodeproxy.MinHopKeyBytes {
		return nil, fmt.Errorf("HOP_KEY_FILE %s: hop key of %d bytes, want at least %d", c.HopKeyFile, len(key), nodeproxy.MinHopKeyBytes)
	}
	return key, nil
}

// warnUnauthenticatedHops says what running without a hop key means.
func warnUnauthenticatedHops(log *slog.Logger) {
	log.Warn("HOP_KEY_FILE is not set: a request to /u/ with the hop header from any node address has its " +
		"X-Forwarded-For/Proto/Host trusted; set HOP_KEY_FILE (the nodeproxy-hop-key Secret) in production, " +
		"and always with hostNetwork")
}
