package agentapp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFilesRoundTrip(t *testing.T) {
	ta := startApp(t, Defaults())
	cookie := ta.login()
	content := bytes.Repeat([]byte("workspace bytes\x00\xff"), 10000)

	resp := ta.do(http.MethodPut, "/api/files/notes/deep/hello.bin", bytes.NewReader(content), cookie, nil)
	var info FileInfo
	if resp.StatusCode != http.StatusCreated || json.Unmarshal([]byte(resp.body), &info) != nil {
		t.Fatalf("upload: status %d body %q", resp.StatusCode, resp.body)
	}
	if info != (FileInfo{Name: "notes/deep/hello.bin", Size: int64(len(content))}) {
		t.Fatalf("upload reply %+v", info)
	}
	onDisk, err := os.ReadFile(filepath.Join(ta.opts.DataDir, workspaceDir, "notes", "deep", "hello.bin"))
	if err != nil || !bytes.Equal(onDisk, content) {
		t.Fatalf("file on disk: %d bytes, %v; want the upload", len(onDisk), err)
	}

	resp = ta.get("/api/files/notes/deep/hello.bin", cookie)
	if resp.StatusCode != http.StatusOK || resp.body != string(content) {
		t.Fatalf("download: status %d, %d bytes", resp.StatusCode, len(resp.body))
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/octet-stream" {
		t.Errorf("download type %q", ct)
	}

	// Overwrite, then a ranged read.
	ta.do(http.MethodPut, "/api/files/notes/deep/hello.bin", strings.NewReader("0123456789"), cookie, nil)
	resp = ta.do(http.MethodGet, "/api/files/notes/deep/hello.bin", nil, cookie, func(r *http.Request) {
		r.Header.Set("Range", "bytes=2-4")
	})
	if resp.StatusCode != http.StatusPartialContent || resp.body != "234" {
		t.Fatalf("range read: status %d %q", resp.StatusCode, resp.body)
	}

	for _, target := range []string{"/api/files/missing.txt", "/api/files/notes"} {
		if resp := ta.get(target, cookie); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", target, resp.StatusCode)
		}
	}
	assertNoTempFiles(t, ta)
}

func TestFilesTraversalRefused(t *testing.T) {
	ta := startApp(t, Defaults())
	cookie := ta.login()
	outside := filepath.Join(ta.opts.DataDir, conversationFile)
	if err := os.WriteFile(outside, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// A symlink inside the workspace that points out of it.
	if err := os.Symlink("..", filepath.Join(ta.opts.DataDir, workspaceDir, "up")); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		target string
		want   int
	}{
		{"/api/files/..%2F" + conversationFile, http.StatusBadRequest},
		{"/api/files/a%2F..%2F..%2Fx", http.StatusBadRequest},
		{"/api/files/%2Fetc%2Fpasswd", http.StatusBadRequest},
		{"/api/files/a%5C..%5Cx", http.StatusBadRequest},
		{"/api/files/a%00b", http.StatusBadRequest},
		{"/api/files/.", http.StatusTemporaryRedirect}, // net/http cleans the path first
		{"/api/files/", http.StatusBadRequest},
		{"/api/files/up/" + conversationFile, http.StatusForbidden},
	}
	for _, tt := range tests {
		for _, method := range []string{http.MethodGet, http.MethodPut} {
			t.Run(method+" "+tt.target, func(t *testing.T) {
				resp := ta.do(method, tt.target, strings.NewReader("overwritten"), cookie, nil)
				if resp.StatusCode != tt.want {
					t.Fatalf("status %d, want %d (%q)", resp.StatusCode, tt.want, resp.body)
				}
			})
		}
	}
	if raw, err := os.ReadFile(outside); err != nil || len(raw) != 0 {
		t.Fatalf("file outside the workspace changed: %q, %v", raw, err)
	}
	if _, err := os.Stat(filepath.Join(ta.opts.DataDir, "x")); err == nil {
		t.Fatal("a file was created outside the workspace")
	}
}

func TestFilesUploadCap(t *testing.T) {
	opts := Defaults()
	opts.MaxUploadBytes = 1024
	ta := startApp(t, opts)
	cookie := ta.login()
	if resp := ta.do(http.MethodPut, "/api/files/fits.bin", bytes.NewReader(make([]byte, 1024)), cookie, nil); resp.StatusCode != http.StatusCreated {
		t.Fatalf("upload at the cap: status %d", resp.StatusCode)
	}
	if resp := ta.do(http.MethodPut, "/api/files/fits.bin", bytes.NewReader(make([]byte, 1025)), cookie, nil); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("upload over the cap: status %d, want 413", resp.StatusCode)
	}
	if resp := ta.get("/api/files/fits.bin", cookie); len(resp.body) != 1024 {
		t.Fatalf("a refused upload replaced the file: %d bytes", len(resp.body))
	}
	assertNoTempFiles(t, ta)
}

func assertNoTempFiles(t *testing.T, ta *testApp) {
	t.Helper()
	filepath.WalkDir(filepath.Join(ta.opts.DataDir, workspaceDir), func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".upload-") {
			t.Errorf("temporary upload left behind: %s", path)
		}
		return nil
	})
}

var fileNameTests = []struct {
	name string
	ok   bool
}{
	{"a.txt", true},
	{"notes/a.txt", true},
	{".hidden", true},
	{"a..b", true},
	{"", false},
	{".", false},
	{"..", false},
	{"../x", false},
	{"a/../b", false},
	{"a/../../b", false},
	{"./a", false},
	{"/etc/passwd", false},
	{"a\\b", false},
	{"a//b", false},
	{"a/", false},
	{"a\x00b", false},
}

func TestValidFileName(t *testing.T) {
	for _, tt := range fileNameTests {
		if got := validFileName(tt.name); got != tt.ok {
			t.Errorf("validFileName(%q) = %v, want %v", tt.name, got, tt.ok)
		}
	}
}

func FuzzValidFileName(f *testing.F) {
	for _, tt := range fileNameTests {
		f.Add(tt.name)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if !validFileName(name) {
			return
		}
		joined := filepath.Join("/workspace", name)
		if !strings.HasPrefix(joined, "/workspace/") || joined == "/workspace/" {
			t.Fatalf("valid name %q leaves the workspace: %q", name, joined)
		}
		if filepath.Join("/workspace", joined[len("/workspace/"):]) != joined || joined[len("/workspace/"):] != name {
			t.Fatalf("valid name %q is not clean: %q", name, joined)
		}
	})
}

func TestViewRendersWorkspacePages(t *testing.T) {
	ta := startApp(t, Defaults())
	cookie := ta.login()
	page := `<!doctype html><script>document.title = "ran"</script>`
	ta.do(http.MethodPut, "/api/files/out/page.html", strings.NewReader(page), cookie, nil)
	resp := ta.get("/view/out/page.html", cookie)
	if resp.StatusCode != http.StatusOK || resp.body != page || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Errorf("view: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), resp.body)
	}
	for target, want := range map[string]int{"/view/missing.html": http.StatusNotFound, "/view/out/..%2f..%2fconversation.jsonl": http.StatusBadRequest} {
		if resp := ta.get(target, cookie); resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", target, resp.StatusCode, want)
		}
	}
}
