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
