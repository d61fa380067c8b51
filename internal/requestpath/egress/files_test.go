package egress

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestFileCacheRechecks: within the recheck interval a file's content and
// its absence come from the cache; after it, a replaced, removed or new
// file is seen.
func TestFileCacheRechecks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "key")
	write := func(v string) {
		t.Helper()
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Unix(1000, 0)
	c := newFileCache(1024)
	c.now = func() time.Time { return now }
	want := func(step, content string) {
		t.Helper()
		data, err := c.read(path)
		switch {
		case content == "" && !errors.Is(err, fs.ErrNotExist):
			t.Fatalf("%s: read = %q, %v; want no such file", step, data, err)
		case content != "" && (err != nil || string(data) != content):
			t.Fatalf("%s: read = %q, %v; want %q", step, data, err, content)
		}
	}
	want("absent", "")
	write("one")
	want("written within the interval", "")
	now = now.Add(fileRecheck)
	want("written, after the interval", "one")
	write("two")
	want("replaced within the interval", "one")
	now = now.Add(fileRecheck)
	want("replaced, after the interval", "two")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	now = now.Add(fileRecheck)
	want("removed", "")
}

// TestFileCacheTooLarge: a file over the cap is an error that keeps its
// number until the file changes, so a caller can report it once.
func TestFileCacheTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "limits")
	now := time.Unix(1000, 0)
	c := newFileCache(8)
	c.now = func() time.Time { return now }
	if err := os.WriteFile(path, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, gen, err := c.readGen(path)
	if !errors.Is(err, errTooLarge) {
		t.Fatalf("read = %v, want too large", err)
	}
	now = now.Add(fileRecheck)
	if _, again, err := c.readGen(path); !errors.Is(err, errTooLarge) || again != gen {
		t.Errorf("read unchanged = %d, %v; want %d, too large", again, err, gen)
	}
	if err := os.WriteFile(path, []byte("small"), 0o600); err != nil {
		t.Fatal(err)
	}
	now = now.Add(fileRecheck)
	if data, _, err := c.readGen(path); err != nil || string(data) != "small" {
		t.Errorf("read after shrinking = %q, %v", data, err)
	}
}
