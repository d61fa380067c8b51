package egress

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"
)

// fileRecheck is how long a file's content (or its absence) is used
// before the file is looked at again. The kubelet takes up to a minute to
// update a mounted Secret or ConfigMap, so a second more is not felt,
// while a stat on every call is most of a call's own CPU time.
const fileRecheck = time.Second

// errTooLarge is a file over its cache's maxBytes: kept as that version's
// content until the file changes.
var errTooLarge = errors.New("file too large")

// fileCache reads small files again only when they changed. The kubelet
// updates a mounted Secret or ConfigMap by swapping a symlink, so a
// changed file has a new inode; an edit in place changes its size or
// modification time. A file is stat'ed at most once per recheck.
type fileCache struct {
	maxBytes int64
	recheck  time.Duration
	now      func() time.Time
	mu       sync.Mutex
	gen      uint64
	files    map[string]cachedFile
}

type cachedFile struct {
	checked time.Time
	missing bool
	ino     uint64
	mod     time.Time
	size    int64
	data    []byte
	err     error // errTooLarge, or nil
	gen     uint64
}

func newFileCache(maxBytes int64) *fileCache {
	return &fileCache{maxBytes: maxBytes, recheck: fileRecheck, now: time.Now, files: make(map[string]cachedFile)}
}

// read returns path's content, or fs.ErrNotExist when there is no such
// file. The returned slice is shared: never modify it.
func (c *fileCache) read(path string) ([]byte, error) {
	data, _, err := c.readGen(path)
	return data, err
}

// readGen is read and a number that changes whenever the content was read
// again, so a caller can keep what it parsed from the last one (or report
// a file over maxBytes once).
func (c *fileCache) readGen(path string) ([]byte, uint64, error) {
	now := c.now()
	c.mu.Lock()
	f, ok := c.files[path]
	c.mu.Unlock()
	if ok && now.Sub(f.checked) < c.recheck {
		if f.missing {
			return nil, 0, fmt.Errorf("read %s: %w", path, fs.ErrNotExist)
		}
		return f.data, f.gen, f.err
	}
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			c.mu.Lock()
			c.files[path] = cachedFile{checked: now, missing: true}
			c.mu.Unlock()
		}
		return nil, 0, err
	}
	var ino uint64
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		ino = s.Ino
	}
	if ok && !f.missing && f.ino == ino && f.mod.Equal(st.ModTime()) && f.size == st.Size() {
		f.checked = now
		c.mu.Lock()
		c.files[path] = f
		c.mu.Unlock()
		return f.data, f.gen, f.err
	}
	var data []byte
	if st.Size() > c.maxBytes {
		err = fmt.Errorf("read %s: %w: %d bytes, at most %d", path, errTooLarge, st.Size(), c.maxBytes)
	} else if data, err = os.ReadFile(path); err != nil {
		return nil, 0, err
	}
	c.mu.Lock()
	c.gen++
	gen := c.gen
	c.files[path] = cachedFile{checked: now, ino: ino, mod: st.ModTime(), size: st.Size(), data: data, err: err, gen: gen}
	c.mu.Unlock()
	return data, gen, err
}
