package ociimage

import (
	"archive/tar"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"go.uber.org/goleak"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testSpec returns a spec with one binary written under dir.
func testSpec(t *testing.T, dir, content string) Spec {
	t.Helper()
	src := filepath.Join(dir, "app")
	if err := os.WriteFile(src, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return Spec{
		Files:    []File{{Source: src, Path: "/usr/bin/app", Mode: 0o755}},
		Dirs:     []Dir{{Path: "/data", Mode: 0o750, UID: 1000, GID: 1000}},
		Symlinks: []Symlink{{Path: "/bin/app", Target: "../usr/bin/app"}},
		Config: Config{
			Entrypoint: []string{"/usr/bin/app"},
			Cmd:        []string{"serve", "--port", "8080"},
			Env:        []string{"PATH=/usr/bin:/bin", "MODE=test"},
			User:       "65532:65532",
			WorkingDir: "/data",
			Source:     "https://github.com/sandgate/sandgate",
			Revision:   "0123abcd",
			Version:    "v0.3.0",
			Title:      "app",
			Labels:     map[string]string{"example.com/team": "platform"},
		},
	}
}

// build is Build for a spec that must build.
func build(t *testing.T, s Spec) v1.Image {
	t.Helper()
	img, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func digest(t *testing.T, s Spec) v1.Hash {
	t.Helper()
	d, err := build(t, s).Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestReproducible(t *testing.T) {
	a, b := testSpec(t, t.TempDir(), "binary v1"), testSpec(t, t.TempDir(), "binary v1")
	// The same files from another place, touched later, listed in another
	// order give the same image.
	if err := os.Chtimes(b.Files[0].Source, time.Now(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	b.Files = append(b.Files, File{Source: b.Files[0].Source, Path: "/usr/bin/app2", Mode: 0o755})
	a.Files = append([]File{{Source: a.Files[0].Source, Path: "/usr/bin/app2", Mode: 0o755}}, a.Files...)
	if da, db := digest(t, a), digest(t, b); da != db {
		t.Fatalf("same inputs gave %s and %s", da, db)
	}

	changed := map[string]func(*Spec){
		"content": func(s *Spec) { s.Files[0].Source = testSpec(t, t.TempDir(), "binary v2").Files[0].Source },
		"mode":    func(s *Spec) { s.Files[0].Mode = 0o700 },
		"user":    func(s *Spec) { s.Config.User = "0" },
		"epoch":   func(s *Spec) { s.Epoch = time.Unix(1700000000, 0) },
		"version": func(s *Spec) { s.Config.Version = "v0.3.1" },
	}
	for what, edit := range changed {
		c := testSpec(t, t.TempDir(), "binary v1")
		c.Files = slices.Clone(a.Files)
		edit(&c)
		if d := digest(t, c); d == digest(t, a) {
			t.Errorf("changing the %s kept digest %s", what, d)
		}
	}
}

func TestConfig(t *testing.T) {
	s := testSpec(t, t.TempDir(), "binary")
	s.Epoch = time.Unix(1700000000, 123)
	img := build(t, s)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Equal(time.Unix(1700000000, 0)) {
		t.Errorf("platform %s/%s created %v", cf.OS, cf.Architecture, cf.Created)
	}
	want := v1.Config{
		Entrypoint: []string{"/usr/bin/app"},
		Cmd:        []string{"serve", "--port", "8080"},
		Env:        []string{"PATH=/usr/bin:/bin", "MODE=test"},
		User:       "65532:65532",
		WorkingDir: "/data",
		Labels: map[string]string{
			"org.opencontainers.image.source":   "https://github.com/sandgate/sandgate",
			"org.opencontainers.image.revision": "0123abcd",
			"org.opencontainers.image.version":  "v0.3.0",
			"org.opencontainers.image.title":    "app",
			"example.com/team":                  "platform",
		},
	}
	if diff := cmp.Diff(want, cf.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if len(cf.RootFS.DiffIDs) != 1 || len(cf.History) != 1 {
		t.Errorf("rootfs %+v history %+v, want one layer", cf.RootFS, cf.History)
	}
}

// member is what a test checks of one tar entry.
type member struct {
	typ      byte
	mode     int64
	uid, gid int
	link     string
	data     string
	modTime  time.Time
}

func TestTarballRoundTrip(t *testing.T) {
	s := testSpec(t, t.TempDir(), "the binary")
	img := build(t, s)
	path := filepath.Join(t.TempDir(), "app.tar")
	const ref = "sandgate.local/app:v0.3.0"
	sum, err := Write(path, ref, img)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	wantDigest, _ := img.Digest()
	wantID, _ := img.ConfigName()
	if sum.Reference != ref || sum.Digest != wantDigest || sum.ID != wantID || sum.Size != info.Size() {
		t.Errorf("summary %+v, file size %d", sum, info.Size())
	}
	if left, _ := filepath.Glob(path + ".tmp-*"); len(left) != 0 {
		t.Errorf("temporary files left: %q", left)
	}

	loaded := testkit.LoadImage(t, path, ref)
	if id, err := loaded.ConfigName(); err != nil || id != wantID {
		t.Errorf("reloaded config %s (%v), want %s", id, err, wantID)
	}
	got := layerMembers(t, loaded)
	epoch := time.Unix(0, 0)
	want := map[string]member{
		"usr/bin/app":   {typ: tar.TypeReg, mode: 0o755, data: "the binary"},
		"bin/app":       {typ: tar.TypeSymlink, mode: 0o777, link: "../usr/bin/app"},
		"data/":         {typ: tar.TypeDir, mode: 0o750, uid: 1000, gid: 1000},
		"tmp/":          {typ: tar.TypeDir, mode: 0o1777},
		"usr/":          {typ: tar.TypeDir, mode: 0o755},
		"home/nonroot/": {typ: tar.TypeDir, mode: 0o700, uid: NonrootUID, gid: NonrootUID},
	}
	for p, w := range want {
		w.modTime = epoch
		if diff := cmp.Diff(w, got[p], cmp.AllowUnexported(member{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", p, diff)
		}
	}
	if !strings.Contains(got["etc/passwd"].data, "nonroot:x:65532:65532:") || !strings.Contains(got["etc/group"].data, "nonroot:x:65532:") {
		t.Errorf("passwd %q group %q lack nonroot", got["etc/passwd"].data, got["etc/group"].data)
	}
}

// layerMembers reads the image's only layer.
func layerMembers(t *testing.T, img v1.Image) map[string]member {
	t.Helper()
	out := map[string]member{}
	var names []string
	for _, e := range testkit.OnlyLayer(t, img) {
		hdr := e.Header
		names = append(names, hdr.Name)
		out[hdr.Name] = member{typ: hdr.Typeflag, mode: hdr.Mode, uid: hdr.Uid, gid: hdr.Gid, link: hdr.Linkname, data: string(e.Data), modTime: hdr.ModTime}
	}
	if !slices.IsSorted(names) {
		t.Errorf("layer entries not sorted: %q", names)
	}
	return out
}

func TestSpecOverridesBase(t *testing.T) {
	s := testSpec(t, t.TempDir(), "binary")
	s.Dirs = append(s.Dirs, Dir{Path: "/tmp", Mode: 0o700})
	img := build(t, s)
	if m := layerMembers(t, img)["tmp/"]; m.mode != 0o700 {
		t.Errorf("/tmp mode %o, want the spec's 0700", m.mode)
	}
}

func TestValidate(t *testing.T) {
	s := Spec{
		Files: []File{
			{Source: "a", Path: "usr/bin/a", Mode: 0o755},
			{Source: "", Path: "/a", Mode: 0o755 | fs.ModeDir},
			{Source: "b", Path: "/a/b", Mode: 0o644},
		},
		Symlinks: []Symlink{{Path: "/a"}},
		Config:   Config{Env: []string{"NOVALUE"}, Labels: map[string]string{LabelTitle: "x"}},
	}
	err := s.Validate()
	for _, want := range []string{`"usr/bin/a" is not a clean absolute path`, `file "/a" has no source`, "more than permission bits",
		`symlink path "/a" is already a file`, `symlink "/a" has no target`, `file "/a/b" is below file "/a"`,
		"entrypoint or a cmd", `"NOVALUE"`, "label org.opencontainers.image.title"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q", err, want)
		}
	}
	if _, err := Build(s); err == nil {
		t.Error("Build accepted an invalid spec")
	}
}

func TestMissingSource(t *testing.T) {
	s := testSpec(t, t.TempDir(), "binary")
	s.Files[0].Source = filepath.Join(t.TempDir(), "missing")
	if _, err := Build(s); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Build with a missing source: %v, want fs.ErrNotExist", err)
	}
}
