package agentapp

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenFile: with TokenFile the app writes the token it prints to
// that file, owner-only, before it serves; a restarted app replaces it.
func TestTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run", "dsh", "token")
	opts := Defaults()
	opts.TokenFile = path
	first := startApp(t, opts)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != first.token+"\n" {
		t.Fatalf("token file holds %q, the launch line %q", data, first.token)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}

	second := startApp(t, opts)
	data, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if tok := strings.TrimSpace(string(data)); tok != second.token || tok == first.token {
		t.Fatalf("after a restart the file holds %q; launch lines %q then %q", tok, first.token, second.token)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("token directory holds %v, want the token file only", entries)
	}
	second.login()
}

// TestTokenFileUnwritable: an app that cannot write its token file does
// not serve.
func TestTokenFileUnwritable(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "run"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	opts := Defaults()
	opts.DataDir, opts.TokenFile = t.TempDir(), filepath.Join(dir, "run", "token")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := New(opts).Serve(t.Context(), ln); err == nil || !strings.Contains(err.Error(), "token file") {
		t.Fatalf("Serve: %v, want a token file error", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Fatal("listener still open after Serve failed")
	}
}

// TestNewToken: the launch token can take other apps' shapes.
func TestNewToken(t *testing.T) {
	const hex32 = "9f86d081884c7d659a2feaa0c55ad015"
	opts := Defaults()
	opts.NewToken = func() string { return hex32 }
	ta := startApp(t, opts)
	if ta.token != hex32 {
		t.Fatalf("launch line token %q, want %q", ta.token, hex32)
	}
	if got := ta.get("/", ta.login()).StatusCode; got != http.StatusOK {
		t.Errorf("GET / with the cookie: %d", got)
	}
}
