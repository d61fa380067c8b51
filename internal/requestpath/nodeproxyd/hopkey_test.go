package nodeproxyd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHopKeySetting: HOP_KEY_FILE is read at start, a trailing newline
// dropped; a key under 32 bytes or a missing file refuses to start; unset
// means no key.
func TestHopKeySetting(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		name, file, wantKey, wantErr string
	}{
		{"unset", "", "", ""},
		{"hex key with newline", write("good", good+"\n"), good, ""},
		{"31 bytes", write("short", strings.Repeat("a", 31)+"\n"), "", "at least 32"},
		{"missing", filepath.Join(dir, "missing"), "", "HOP_KEY_FILE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := validOrRefused(t, map[string]string{"NODE_NAME": "n1"}, map[string]string{"HOP_KEY_FILE": tc.file}, tc.wantErr)
			if !ok {
				return
			}
			key, err := c.hopKey()
			if err != nil || string(key) != tc.wantKey {
				t.Errorf("hopKey() = %q, %v; want %q", key, err, tc.wantKey)
			}
		})
	}
}
