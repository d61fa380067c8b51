package ociimage

import (
	"debug/elf"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
)

// LibDirs are where HostClosure looks up shared libraries, in order, and
// where the image's dynamic loader finds them (Debian's multiarch system
// directories).
var LibDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"}

// HostClosure returns the files that make dynamically linked host programs
// run in an image: each program and plugin at its own path, the ELF
// interpreter they name, and every shared library they need, directly or
// through another library, copied to LibDirs[0] under the name they are
// asked for. Programs keep mode 0755, libraries and plugins 0644.
func HostClosure(programs, plugins []string) ([]File, error) {
	c := closure{files: map[string]File{}}
	for _, p := range programs {
		if err := c.add(p, p, 0o755); err != nil {
			return nil, err
		}
	}
	for _, p := range plugins {
		if err := c.add(p, p, 0o644); err != nil {
			return nil, err
		}
	}
	out := make([]File, 0, len(c.files))
	for _, k := range slices.Sorted(maps.Keys(c.files)) {
		out = append(out, c.files[k])
	}
	return out, nil
}

type closure struct {
	files map[string]File
}

// add puts the ELF file at source into the image at dest and follows its
// interpreter and needed libraries.
func (c *closure) add(source, dest string, mode os.FileMode) error {
	if _, ok := c.files[dest]; ok {
		return nil
	}
	real, err := filepath.EvalSymlinks(source)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", source, err)
	}
	c.files[dest] = File{Source: real, Path: dest, Mode: mode}
	f, err := elf.Open(real)
	if err != nil {
		return fmt.Errorf("read ELF %s: %w", real, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return fmt.Errorf("read interpreter of %s: %w", real, err)
		}
		interp := string(b[:max(0, len(b)-1)])
		if err := c.add(interp, interp, 0o755); err != nil {
			return err
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("read needed libraries of %s: %w", real, err)
	}
	for _, lib := range libs {
		src, err := findLib(lib)
		if err != nil {
			return fmt.Errorf("%s needs %s: %w", source, lib, err)
		}
		if err := c.add(src, path.Join(LibDirs[0], lib), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// findLib returns the first LibDirs entry holding lib.
func findLib(lib string) (string, error) {
	if lib != path.Base(lib) {
		return "", fmt.Errorf("library name %q is a path", lib)
	}
	for _, d := range LibDirs {
		p := filepath.Join(d, lib)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("not found in %v", LibDirs)
}
