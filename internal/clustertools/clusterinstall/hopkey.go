package clusterinstall

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// hopKeyFile is the node proxies' shared hop key in the overlay, the
// nodeproxy-hop-key Secret's hop.key.
const hopKeyFile = "hop.key"

// writeHopKey writes a random hop key (32 bytes, hex) into dir, unless an
// earlier Install left one there: node proxies read the key once at start,
// so one that started before this Install must keep agreeing with one that
// starts after it.
func writeHopKey(dir string) error {
	name := filepath.Join(dir, hopKeyFile)
	if data, err := os.ReadFile(name); err == nil && len(data) >= 64 {
		return nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read the hop key: %w", err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	if err := os.WriteFile(name, []byte(hex.EncodeToString(key)), 0o600); err != nil {
		return fmt.Errorf("write the hop key: %w", err)
	}
	return nil
}
