package ociimage

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Build assembles the image s describes: one layer, a linux/amd64 config.
// It reads the source files once.
func Build(s Spec) (v1.Image, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("image spec: %w", err)
	}
	epoch := s.Epoch.UTC().Truncate(time.Second)
	if s.Epoch.IsZero() {
		epoch = time.Unix(0, 0).UTC()
	}
	blob, err := s.layer(epoch)
	if err != nil {
		return nil, fmt.Errorf("build layer: %w", err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(blob)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("digest layer: %w", err)
	}
	created := v1.Time{Time: epoch}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		Architecture: "amd64",
		OS:           "linux",
		Created:      created,
		Config: v1.Config{
			Entrypoint: s.Config.Entrypoint,
			Cmd:        s.Config.Cmd,
			Env:        s.Config.Env,
			User:       s.Config.User,
			WorkingDir: s.Config.WorkingDir,
			Labels:     s.Config.labels(),
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, fmt.Errorf("set image config: %w", err)
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: created, CreatedBy: "sandgate ociimage", Comment: "files from local disk"},
	})
	if err != nil {
		return nil, fmt.Errorf("add layer: %w", err)
	}
	return img, nil
}

// Summary describes one written image tarball.
type Summary struct {
	// Reference is the tag the tarball carries, as ctr imports it.
	Reference string
	// Digest is the image manifest's digest as built here. containerd
	// derives its own manifest when it imports a docker-archive tarball, so
	// `ctr images ls` shows another digest; ID stays the same.
	Digest v1.Hash
	// ID is the config digest: the image ID crictl and the kubelet show.
	ID v1.Hash
	// Size is the tarball's size in bytes.
	Size int64
}

// Write writes img tagged ref (for example sandgate.local/nodeproxy:v0.3.0)
// to path as a docker-archive tarball, which `ctr images import` and
// tarball.ImageFromPath read. It writes a temporary file beside path and
// renames it, so path is never half-written.
func Write(path, ref string, img v1.Image) (Summary, error) {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return Summary{}, fmt.Errorf("parse reference %q: %w", ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return Summary{}, fmt.Errorf("digest image %s: %w", ref, err)
	}
	id, err := img.ConfigName()
	if err != nil {
		return Summary{}, fmt.Errorf("digest config of %s: %w", ref, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return Summary{}, fmt.Errorf("create tarball for %s: %w", ref, err)
	}
	defer os.Remove(tmp.Name())
	err = tarball.Write(tag, img, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Summary{}, fmt.Errorf("write tarball for %s: %w", ref, err)
	}
	info, err := os.Stat(tmp.Name())
	if err != nil {
		return Summary{}, fmt.Errorf("stat tarball for %s: %w", ref, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return Summary{}, fmt.Errorf("chmod tarball for %s: %w", ref, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return Summary{}, fmt.Errorf("move tarball for %s into place: %w", ref, err)
	}
	return Summary{Reference: tag.String(), Digest: digest, ID: id, Size: info.Size()}, nil
}
