// Package ociimage assembles single-layer linux/amd64 container images from
// local files, reproducibly, and writes them as tarballs that
// `ctr -n k8s.io images import` loads: no Docker, no registry.
//
// The same Spec always gives the same image digest: every entry has the
// same file time (Spec.Epoch), entries are sorted, owners are numeric and
// the layer is gzip-compressed without a name or time in its header.
package ociimage

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"
)

// OCI annotation keys the image config carries as labels.
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelRevision = "org.opencontainers.image.revision"
	LabelVersion  = "org.opencontainers.image.version"
	LabelTitle    = "org.opencontainers.image.title"
)

// Spec describes one image: the files of its only layer and its config.
type Spec struct {
	// Files are copied from disk into the image.
	Files []File
	// Dirs are created with the given owner and mode. Parent directories of
	// every entry are created anyway, root-owned with mode 0755.
	Dirs []Dir
	// Symlinks are created as given.
	Symlinks []Symlink
	// Config is the runtime configuration.
	Config Config
	// Epoch is the time of every file and of the image's creation; zero
	// means the Unix epoch. Pass SOURCE_DATE_EPOCH here.
	Epoch time.Time
}

// File is one regular file copied into the image, owned by root.
type File struct {
	// Source is the file's path on disk.
	Source string
	// Path is its absolute path in the image.
	Path string
	// Mode holds its permission bits (setuid, setgid and sticky included).
	Mode fs.FileMode
}

// Dir is one directory in the image with its owner and mode.
type Dir struct {
	// Path is absolute.
	Path string
	// Mode holds its permission bits (sticky included: /tmp is 01777).
	Mode fs.FileMode
	// UID and GID own it.
	UID, GID int
}

// Symlink is one symbolic link in the image.
type Symlink struct {
	// Path is the link's absolute path.
	Path string
	// Target is what it points to, as stored in the link.
	Target string
}

// Config is the image's runtime configuration.
type Config struct {
	// Entrypoint and Cmd start the container; Cmd gives Entrypoint's
	// default arguments.
	Entrypoint, Cmd []string
	// Env holds KEY=value pairs.
	Env []string
	// User is "uid", "uid:gid" or a name from the image's /etc/passwd.
	User string
	// WorkingDir is the container's working directory; empty means /.
	WorkingDir string
	// Source, Revision, Version and Title become the OCI labels
	// org.opencontainers.image.source, .revision, .version and .title;
	// empty ones are left out.
	Source, Revision, Version, Title string
	// Labels are further labels; they must not repeat the four above.
	Labels map[string]string
}

// labels returns Labels with the OCI labels added.
func (c Config) labels() map[string]string {
	out := map[string]string{}
	for k, v := range c.Labels {
		out[k] = v
	}
	for k, v := range map[string]string{LabelSource: c.Source, LabelRevision: c.Revision, LabelVersion: c.Version, LabelTitle: c.Title} {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

// Validate reports every problem in s at once. It changes nothing and
// does not look at the disk.
func (s Spec) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	seen := map[string]string{}
	claim := func(p, what string) {
		if !validPath(p) {
			bad("%s path %q is not a clean absolute path below /", what, p)
			return
		}
		if prev, ok := seen[p]; ok {
			bad("%s path %q is already a %s", what, p, prev)
			return
		}
		seen[p] = what
	}
	for _, f := range s.Files {
		claim(f.Path, "file")
		if f.Source == "" {
			bad("file %q has no source", f.Path)
		}
		if f.Mode&^permBits != 0 {
			bad("file %q mode %v has more than permission bits", f.Path, f.Mode)
		}
	}
	for _, d := range s.Dirs {
		claim(d.Path, "directory")
		if d.Mode&^permBits != 0 {
			bad("directory %q mode %v has more than permission bits", d.Path, d.Mode)
		}
		if d.UID < 0 || d.GID < 0 {
			bad("directory %q owner %d:%d is negative", d.Path, d.UID, d.GID)
		}
	}
	for _, l := range s.Symlinks {
		claim(l.Path, "symlink")
		if l.Target == "" {
			bad("symlink %q has no target", l.Path)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(seen)) {
		what := seen[p]
		for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
			if other, ok := seen[dir]; ok && other != "directory" {
				bad("%s %q is below %s %q", what, p, other, dir)
			}
		}
	}
	if len(s.Config.Entrypoint) == 0 && len(s.Config.Cmd) == 0 {
		bad("config needs an entrypoint or a cmd")
	}
	if w := s.Config.WorkingDir; w != "" && !validPath(w) && w != "/" {
		bad("working dir %q is not a clean absolute path", w)
	}
	for _, e := range s.Config.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			bad("env entry %q is not KEY=value", e)
		}
	}
	for _, k := range []string{LabelSource, LabelRevision, LabelVersion, LabelTitle} {
		if _, ok := s.Config.Labels[k]; ok {
			bad("label %s is set by a Config field", k)
		}
	}
	return errors.Join(errs...)
}

// permBits are the mode bits an entry may carry.
const permBits = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// validPath reports whether p is a clean absolute path other than /.
func validPath(p string) bool {
	return strings.HasPrefix(p, "/") && p != "/" && path.Clean(p) == p
}
