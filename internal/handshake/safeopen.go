package handshake

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// The node proxy reads, as root, files whose directories a pod's writer
// may shape: log files the runtime writes for the app, a token file the app
// writes itself. These helpers walk one path component at a time and
// refuse symlinks and anything but directories and regular files, also
// when one is swapped in between the check and the open. A missing
// component comes back wrapping fs.ErrNotExist for the caller to classify.

// openDir opens root/first/rest[0]/rest[1]/... as a root of its own.
func openDir(root *os.Root, first string, rest ...string) (*os.Root, error) {
	dir, err := openSubdir(root, first)
	for _, name := range rest {
		if err != nil {
			return nil, err
		}
		var next *os.Root
		next, err = openSubdir(dir, name)
		dir.Close()
		dir = next
	}
	return dir, err
}

// openSubdir opens the directory name, one component, under dir.
func openSubdir(dir *os.Root, name string) (*os.Root, error) {
	before, err := dir.Lstat(name)
	if err != nil {
		return nil, fmt.Errorf("stat directory: %w", err)
	}
	if !before.IsDir() {
		return nil, fmt.Errorf("%w: directory is a %s", ErrUnsafePath, kindOf(before.Mode()))
	}
	sub, err := dir.OpenRoot(name)
	if err != nil {
		return nil, fmt.Errorf("open directory: %w", err)
	}
	// The directory may have been swapped for a symlink since Lstat.
	again, err1 := dir.Lstat(name)
	after, err2 := sub.Stat(".")
	if err := cmp.Or(err1, err2); err != nil {
		sub.Close()
		return nil, fmt.Errorf("stat directory: %w", err)
	}
	if !os.SameFile(before, again) || !os.SameFile(before, after) {
		sub.Close()
		return nil, fmt.Errorf("%w: directory changed while opening", ErrUnsafePath)
	}
	return sub, nil
}

// openRegular opens the regular file name in dir for reading.
func openRegular(dir *os.Root, name string) (*os.File, fs.FileInfo, error) {
	before, err := dir.Lstat(name)
	if err != nil {
		return nil, nil, fmt.Errorf("stat file: %w", err)
	}
	if !before.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%w: file is a %s", ErrUnsafePath, kindOf(before.Mode()))
	}
	// O_NONBLOCK: a FIFO swapped in after Lstat must not hang the open;
	// the Stat below then refuses it.
	f, err := dir.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, nil, fmt.Errorf("%w: file became a symlink while opening", ErrUnsafePath)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open file: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("stat file: %w", err)
	}
	if !os.SameFile(before, fi) || !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("%w: file changed while opening", ErrUnsafePath)
	}
	return f, fi, nil
}

func kindOf(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symlink"
	case m.IsDir():
		return "directory"
	case m.IsRegular():
		return "regular file"
	}
	return "special file"
}
