package nodeproxyd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuthProxySecretSetting: AUTH_PROXY_SECRET_FILE is read at start, a
// trailing newline dropped; a secret under 32 bytes, a missing file or no
// AUTH_PROXY_HEADER beside it refuses to start; unset means no secret.
func TestAuthProxySecretSetting(t *testing.T) {
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
		name, file, header, want, wantErr string
	}{
		{"unset", "", "", "", ""},
		{"hex secret with newline", write("good", good+"\n"), "X-Forwarded-User", good, ""},
		{"31 bytes", write("short", strings.Repeat("a", 31)+"\n"), "X-Forwarded-User", "", "at least 32"},
		{"missing", filepath.Join(dir, "missing"), "X-Forwarded-User", "", "AUTH_PROXY_SECRET_FILE"},
		{"no header", write("alone", good), "", "", "needs AUTH_PROXY_HEADER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := validOrRefused(t, map[string]string{"NODE_NAME": "n1"},
				map[string]string{"AUTH_PROXY_SECRET_FILE": tc.file, "AUTH_PROXY_HEADER": tc.header}, tc.wantErr)
			if !ok {
				return
			}
			secret, err := c.authProxySecret()
			if err != nil || string(secret) != tc.want {
				t.Errorf("authProxySecret() = %q, %v; want %q", secret, err, tc.want)
			}
		})
	}
}
