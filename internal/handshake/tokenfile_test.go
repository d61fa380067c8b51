package handshake

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// podsDir lays out a kubelet pod directory with the token file's volume.
type podsDir struct {
	t    *testing.T
	root string
}

// volume is the test pod's token volume directory.
func (p podsDir) volume() string {
	return filepath.Join(p.root, testUID, filepath.Dir(DefaultTokenFile))
}

// write puts content into the test pod's token file, as the app does:
// mode 0600, renamed into place.
func (p podsDir) write(content string) {
	p.t.Helper()
	if err := os.MkdirAll(p.volume(), 0o777); err != nil {
		p.t.Fatal(err)
	}
	tmp := filepath.Join(p.volume(), ".token.tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		p.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(p.volume(), "token")); err != nil {
		p.t.Fatal(err)
	}
}

// newFileHarness is a harness whose Handshaker reads the token file.
func newFileHarness(t *testing.T) (*harness, podsDir) {
	t.Helper()
	pods := podsDir{t: t, root: t.TempDir()}
	x := newHarness(t, func(o *Options) { o.TokenSource, o.PodsRoot = SourceFile, pods.root })
	x.logs.write("0.log", x.crier.out(launchLine(tokB))) // the logs are not read
	pods.write(x.token + "\n")
	return x, pods
}

func TestTokenFileSource(t *testing.T) {
	x, pods := newFileHarness(t)
	if got := x.mustCookie(x.target); got != x.cookie {
		t.Fatalf("cookie %q, want %q", got, x.cookie)
	}
	if seen := x.app.seen.Last(); seen.uri != "/?token="+x.token {
		t.Errorf("exchanged %q", seen.uri)
	}
	if v := counter(x.h.metrics.handshakes.WithLabelValues(resultOK, SourceFile)); v != 1 {
		t.Errorf("ok handshakes from the file: %v", v)
	}

	// The container restarts and the app writes its new token.
	stale := x.cookie
	x.restartApp("1")
	pods.write(x.token)
	fresh, err := x.h.Refresh(context.Background(), x.target, stale)
	if err != nil || fresh != x.cookie {
		t.Fatalf("refresh: %q, %v", fresh, err)
	}
	x.wantExchanges(2)
	if strings.Contains(x.logBuf.String(), x.token) {
		t.Error("the token appears in the log")
	}
}

// TestTokenFileRefused: a token the app refuses is remembered until the
// file changes.
func TestTokenFileRefused(t *testing.T) {
	x, pods := newFileHarness(t)
	pods.write(tokB)
	if _, err := x.h.Cookie(context.Background(), x.target); !errors.Is(err, ErrTokenRefused) {
		t.Fatalf("got %v", err)
	}
	x.advance(DefaultFailureTTL)
	if _, err := x.h.Cookie(context.Background(), x.target); !errors.Is(err, ErrNoToken) {
		t.Fatalf("got %v, want ErrNoToken", err)
	}
	x.wantExchanges(1)
	pods.write(x.token)
	x.advance(DefaultFailureTTL)
	if got := x.mustCookie(x.target); got != x.cookie {
		t.Fatalf("cookie %q", got)
	}
}

func TestTokenFileErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, p podsDir)
		want  error
	}{
		{"no pod directory", func(*testing.T, podsDir) {}, ErrNoToken},
		{"not written yet", func(t *testing.T, p podsDir) { os.MkdirAll(p.volume(), 0o777) }, ErrNoToken},
		{"empty", func(t *testing.T, p podsDir) { p.write("\n") }, ErrNoToken},
		{"two words", func(t *testing.T, p podsDir) { p.write(tokA + " " + tokB) }, ErrNoToken},
		{"too large", func(t *testing.T, p podsDir) { p.write(strings.Repeat("x", maxTokenFileBytes+1)) }, ErrNoToken},
		{"file is a symlink", func(t *testing.T, p podsDir) {
			p.write(tokA)
			os.WriteFile(filepath.Join(p.root, "elsewhere"), []byte(tokA), 0o600)
			os.Remove(filepath.Join(p.volume(), "token"))
			mustSymlink(t, filepath.Join(p.root, "elsewhere"), filepath.Join(p.volume(), "token"))
		}, ErrUnsafePath},
		{"file links to another pod's token", func(t *testing.T, p podsDir) {
			other := filepath.Join(p.root, "ffffffff-ffff-4fff-8fff-ffffffffffff", filepath.Dir(DefaultTokenFile))
			os.MkdirAll(other, 0o777)
			os.WriteFile(filepath.Join(other, "token"), []byte(tokA), 0o600)
			os.MkdirAll(p.volume(), 0o777)
			mustSymlink(t, "../../../../ffffffff-ffff-4fff-8fff-ffffffffffff/volumes/kubernetes.io~empty-dir/dsh-token/token", filepath.Join(p.volume(), "token"))
		}, ErrUnsafePath},
		{"volume is a symlink", func(t *testing.T, p podsDir) {
			real := filepath.Join(p.root, "real")
			os.MkdirAll(real, 0o777)
			os.WriteFile(filepath.Join(real, "token"), []byte(tokA), 0o600)
			os.MkdirAll(filepath.Dir(p.volume()), 0o755)
			mustSymlink(t, real, p.volume())
		}, ErrUnsafePath},
		{"file is a directory", func(t *testing.T, p podsDir) { os.MkdirAll(filepath.Join(p.volume(), "token"), 0o755) }, ErrUnsafePath},
		{"file is a fifo", func(t *testing.T, p podsDir) {
			os.MkdirAll(p.volume(), 0o777)
			if err := syscall.Mkfifo(filepath.Join(p.volume(), "token"), 0o600); err != nil {
				t.Skip("mkfifo:", err)
			}
		}, ErrUnsafePath},
		{"writable by anyone", func(t *testing.T, p podsDir) {
			p.write(tokA)
			os.Chmod(filepath.Join(p.volume(), "token"), 0o666)
		}, ErrUnsafePath},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			r, err := os.OpenRoot(root)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			tc.setup(t, podsDir{t: t, root: root})
			tok, _, err := newFileReader(r, DefaultTokenFile).read(testUID)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if tok != "" {
				t.Errorf("token %q returned with an error", tok)
			}
		})
	}
	r, err := os.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, _, err := newFileReader(r, DefaultTokenFile).read("../etc"); !errors.Is(err, ErrInvalidRef) {
		t.Errorf("bad uid: %v", err)
	}
}

func TestTokenFilePath(t *testing.T) {
	for path, ok := range map[string]bool{
		DefaultTokenFile:     true,
		"token":              true,
		"volumes/x/run/tok":  true,
		"":                   false,
		".":                  false,
		"/var/lib/token":     false,
		"../other/token":     false,
		"volumes/../../x":    false,
		"volumes//token":     false,
		"volumes/./token":    false,
		"volumes/token/":     false,
		"volumes/tok\x00en":  false,
		"volumes/x/../token": false,
	} {
		if got := validTokenFilePath(path); got != ok {
			t.Errorf("validTokenFilePath(%q) = %v, want %v", path, got, ok)
		}
	}
}

// tokenFileCases drive TestParseTokenFile and seed FuzzParseTokenFile.
var tokenFileCases = []struct {
	content string
	want    string // "" means refused
}{
	{tokA, tokA},
	{tokA + "\n", tokA},
	{" \t" + tokHex32 + "\r\n", tokHex32},
	{tok200, tok200},
	{"", ""},
	{"\n\n", ""},
	{tokA + "\n" + tokB + "\n", ""},
	{"a b", ""},
	{"tok\x00en", ""},
	{strings.Repeat("x", maxTokenLen), strings.Repeat("x", maxTokenLen)},
	{strings.Repeat("x", maxTokenLen+1), ""},
}

func TestParseTokenFile(t *testing.T) {
	for _, tc := range tokenFileCases {
		got, ok := parseTokenFile([]byte(tc.content))
		if ok != (tc.want != "") || got != tc.want {
			t.Errorf("parseTokenFile(%.40q) = %.40q, %v; want %.40q", tc.content, got, ok, tc.want)
		}
	}
}

func FuzzParseTokenFile(f *testing.F) {
	for _, tc := range tokenFileCases {
		f.Add([]byte(tc.content))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, ok := parseTokenFile(data)
		if !ok {
			if tok != "" {
				t.Fatalf("token %q without ok", tok)
			}
			return
		}
		if !validToken([]byte(tok)) || strings.TrimSpace(string(data)) != tok {
			t.Fatalf("token %q from %q", tok, data)
		}
	})
}
