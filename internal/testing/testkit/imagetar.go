package testkit

import (
	"archive/tar"
	"errors"
	"io"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// LoadImage loads the image tagged ref from the image tarball at path, as
// a container runtime's import would.
func LoadImage(t testing.TB, path, ref string) v1.Image {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatalf("load %s as %s: %v", path, ref, err)
	}
	return img
}

// LayerEntry is one entry of an image layer: its tar header and content.
type LayerEntry struct {
	Header *tar.Header
	Data   []byte
}

// OnlyLayer reads the entries of img's only layer, in their order; the
// test fails if img has another number of layers.
func OnlyLayer(t testing.TB, img v1.Image) []LayerEntry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers %d, %v; want 1", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var out []LayerEntry
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, LayerEntry{Header: hdr, Data: data})
	}
}
