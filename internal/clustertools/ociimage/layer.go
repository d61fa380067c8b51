package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"time"
)

// entry is one member of the layer. Regular files come from source on
// disk or from data.
type entry struct {
	hdr    tar.Header // Name, ModTime and Format are set when written
	source string
	data   []byte
}

// entries returns the layer's members by image path: the base entries,
// replaced by the Spec's at the same path, and every missing parent
// directory. Files are looked up on disk for their size.
func (s Spec) entries() (map[string]entry, error) {
	m := baseEntries()
	for _, f := range s.Files {
		info, err := os.Stat(f.Source)
		if err != nil {
			return nil, fmt.Errorf("stat %s for %s: %w", f.Source, f.Path, err)
		}
		if !info.Mode().IsRegular() {
			return nil, fmt.Errorf("source %s for %s is not a regular file", f.Source, f.Path)
		}
		m[f.Path] = entry{hdr: tar.Header{Typeflag: tar.TypeReg, Mode: unixMode(f.Mode), Size: info.Size()}, source: f.Source}
	}
	for _, d := range s.Dirs {
		m[d.Path] = dirEntry(d.Mode, d.UID, d.GID)
	}
	for _, l := range s.Symlinks {
		m[l.Path] = entry{hdr: tar.Header{Typeflag: tar.TypeSymlink, Linkname: l.Target, Mode: 0o777}}
	}
	for _, p := range slices.Collect(maps.Keys(m)) {
		for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
			e, ok := m[dir]
			if !ok {
				m[dir] = dirEntry(0o755, 0, 0)
				continue
			}
			if e.hdr.Typeflag != tar.TypeDir {
				return nil, fmt.Errorf("%s needs directory %s, which is not one", p, dir)
			}
		}
	}
	return m, nil
}

// layer returns the gzip-compressed tar of the Spec's entries, sorted by
// path, every one stamped with epoch.
func (s Spec) layer(epoch time.Time) ([]byte, error) {
	m, err := s.entries()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, fmt.Errorf("start gzip: %w", err)
	}
	tw := tar.NewWriter(zw)
	for _, p := range slices.Sorted(maps.Keys(m)) {
		if err := writeEntry(tw, p, m[p], epoch); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("finish layer tar: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("finish layer gzip: %w", err)
	}
	return buf.Bytes(), nil
}

// writeEntry writes e as image path p. A source file must still have the
// size it had when entries looked at it.
func writeEntry(tw *tar.Writer, p string, e entry, epoch time.Time) error {
	hdr := e.hdr
	hdr.Name = strings.TrimPrefix(p, "/")
	if hdr.Typeflag == tar.TypeDir {
		hdr.Name += "/"
	}
	hdr.ModTime = epoch
	hdr.Format = tar.FormatPAX
	if err := tw.WriteHeader(&hdr); err != nil {
		return fmt.Errorf("write tar header for %s: %w", p, err)
	}
	switch {
	case e.data != nil:
		if _, err := tw.Write(e.data); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	case e.source != "":
		return copyFile(tw, p, e.source, hdr.Size)
	}
	return nil
}

func copyFile(w io.Writer, p, source string, size int64) error {
	f, err := os.Open(source)
	if err != nil {
		return fmt.Errorf("open %s for %s: %w", source, p, err)
	}
	defer f.Close()
	n, err := io.Copy(w, io.LimitReader(f, size+1))
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w", source, p, err)
	}
	if n != size {
		return fmt.Errorf("copy %s to %s: the file changed size while the image was built", source, p)
	}
	return nil
}

// unixMode turns permission, setuid, setgid and sticky bits into the tar
// header's mode.
func unixMode(m fs.FileMode) int64 {
	mode := int64(m.Perm())
	if m&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	return mode
}
