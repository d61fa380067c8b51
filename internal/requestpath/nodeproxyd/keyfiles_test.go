package nodeproxyd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyFileSettings: HOP_KEY_FILE and AUTH_PROXY_SECRET_FILE are read at
// start, a trailing newline dropped; under 32 bytes or a missing file
// refuses to start; unset means none. AUTH_PROXY_SECRET_FILE also needs
// AUTH_PROXY_HEADER beside it.
func TestKeyFileSettings(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := strings.Repeat("ab", 32)
	short := write("short", strings.Repeat("a", 31)+"\n")
	hopKey := func(c Config) ([]byte, error) { return c.hopKey() }
	proxySecret := func(c Config) ([]byte, error) { return c.authProxySecret() }
	for _, tc := range []struct {
		name          string
		env           map[string]string
		read          func(Config) ([]byte, error)
		want, wantErr string
	}{
		{"hop key unset", nil, hopKey, "", ""},
		{"hop key hex with newline", map[string]string{"HOP_KEY_FILE": write("hop", good+"\n")}, hopKey, good, ""},
		{"hop key 31 bytes", map[string]string{"HOP_KEY_FILE": short}, hopKey, "", "at least 32"},
		{"hop key missing", map[string]string{"HOP_KEY_FILE": filepath.Join(dir, "missing")}, hopKey, "", "HOP_KEY_FILE"},
		{"proxy secret unset", nil, proxySecret, "", ""},
		{"proxy secret hex with newline", map[string]string{"AUTH_PROXY_SECRET_FILE": write("proof", good+"\n"), "AUTH_PROXY_HEADER": "X-Forwarded-User"}, proxySecret, good, ""},
		{"proxy secret 31 bytes", map[string]string{"AUTH_PROXY_SECRET_FILE": short, "AUTH_PROXY_HEADER": "X-Forwarded-User"}, proxySecret, "", "at least 32"},
		{"proxy secret missing", map[string]string{"AUTH_PROXY_SECRET_FILE": filepath.Join(dir, "missing"), "AUTH_PROXY_HEADER": "X-Forwarded-User"}, proxySecret, "", "AUTH_PROXY_SECRET_FILE"},
		{"proxy secret without header", map[string]string{"AUTH_PROXY_SECRET_FILE": write("alone", good)}, proxySecret, "", "needs AUTH_PROXY_HEADER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := validOrRefused(t, map[string]string{"NODE_NAME": "n1"}, tc.env, tc.wantErr)
			if !ok {
				return
			}
			got, err := tc.read(c)
			if err != nil || string(got) != tc.want {
				t.Errorf("read = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
