package main

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/sandgate/sandgate/internal/clustertools/ociimage"
)

// buildAll writes every image whose binary exists and prints one line per
// image. A required image without its binary, or any other failure, stops
// the run.
func buildAll(o Options, out io.Writer) error {
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return fmt.Errorf("create output dir: %w", err)
	}
	for _, im := range catalog() {
		src := o.source(im)
		err := checkBinary(src)
		if errors.Is(err, fs.ErrNotExist) && !slices.Contains(o.Require, im.name) {
			fmt.Fprintf(out, "%-26s skipped: no binary at %s (%s; --require %s makes this an error)\n", im.name, src, im.hint, im.name)
			continue
		}
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: no binary at %s (%s)", im.name, src, im.hint)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", im.name, err)
		}
		spec, err := im.spec(src, o)
		if err != nil {
			return fmt.Errorf("%s: %w", im.name, err)
		}
		img, err := ociimage.Build(spec)
		if err != nil {
			return fmt.Errorf("%s: %w", im.name, err)
		}
		path := filepath.Join(o.OutDir, im.name+".tar")
		sum, err := ociimage.Write(path, o.reference(im.name), img)
		if err != nil {
			return fmt.Errorf("%s: %w", im.name, err)
		}
		fmt.Fprintf(out, "%-26s %s %s %s id=%s %s\n", im.name, sum.Reference, sum.Digest, humanSize(sum.Size), sum.ID, path)
	}
	return nil
}

// source is where image im's binary comes from: --bin, then the catalog's
// own source, then --bin-dir.
func (o Options) source(im image) string {
	if p, ok := o.Bins[im.name]; ok {
		return p
	}
	if im.source != "" {
		return im.source
	}
	return filepath.Join(o.BinDir, im.name)
}

// checkBinary makes sure path is a statically linked x86-64 ELF
// executable: the images hold no C library or loader.
func checkBinary(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("read binary %s: %w", path, err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 {
		return fmt.Errorf("binary %s is %v %v, want a linux/amd64 (ELFCLASS64 EM_X86_64) one", path, f.Class, f.Machine)
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("binary %s is an ELF %v, not an executable", path, f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("binary %s is dynamically linked; build it with CGO_ENABLED=0", path)
		}
	}
	return nil
}

// humanSize formats n bytes for the summary line.
func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
