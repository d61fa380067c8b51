package main

import (
	"archive/tar"
	"bytes"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"go.uber.org/goleak"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeELF returns a minimal x86-64 ELF executable header with one PT_LOAD
// segment, and a PT_INTERP one when dynamic: enough for debug/elf.
func fakeELF(dynamic bool) []byte {
	phnum := uint16(1)
	if dynamic {
		phnum = 2
	}
	var b bytes.Buffer
	b.Write([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	le := binary.LittleEndian
	for _, v := range []any{
		uint16(2), uint16(62), uint32(1), // ET_EXEC, EM_X86_64, EV_CURRENT
		uint64(0x401000), uint64(64), uint64(0), // entry, phoff, shoff
		uint32(0), uint16(64), uint16(56), phnum, // flags, ehsize, phentsize, phnum
		uint16(64), uint16(0), uint16(0), // shentsize, shnum, shstrndx
	} {
		binary.Write(&b, le, v)
	}
	phdr := func(typ uint32) {
		for _, v := range []any{typ, uint32(5), uint64(0), uint64(0x400000), uint64(0x400000), uint64(b.Len()), uint64(b.Len()), uint64(0x1000)} {
			binary.Write(&b, le, v)
		}
	}
	phdr(1) // PT_LOAD
	if dynamic {
		phdr(3) // PT_INTERP
	}
	return b.Bytes()
}

// binDir writes a fake static binary for each name into a new directory.
func binDir(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), append(fakeELF(false), n...), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

var line = regexp.MustCompile(`(?m)^(\S+) +(\S+) (sha256:[0-9a-f]{64}) (\S+) id=(sha256:[0-9a-f]{64}) (\S+)$`)

func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"--help"}, testkit.Env(nil), &out, &errOut); code != 0 {
		t.Fatalf("--help exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"Usage: sandgate-images", "ctr -n k8s.io images import", "-bin-dir", "-out-dir", "-version",
		"-bin name=path", "-require", "busybox-static", "authapi, nodeproxy, agent-standin"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

// buildImages runs the command over binaries for every image but coredns
// and returns its output.
func buildImages(t *testing.T, bins, out string, extra ...string) string {
	t.Helper()
	args := append([]string{"--bin-dir", bins, "--out-dir", out, "--version", "v0.3.0", "--revision", "abc123",
		"--bin", "busybox=" + filepath.Join(bins, "busybox")}, extra...)
	var stdout, stderr bytes.Buffer
	if code := run(args, testkit.Env(nil), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	return stdout.String()
}

func TestBuildAll(t *testing.T) {
	bins := binDir(t, "authapi", "nodeproxy", "agent-standin", "sandbox-controller-standin", "pause", "busybox")
	out := t.TempDir()
	first := buildImages(t, bins, out)

	built := line.FindAllStringSubmatch(first, -1)
	var refs []string
	for _, m := range built {
		refs = append(refs, m[2])
		if m[6] != filepath.Join(out, m[1]+".tar") {
			t.Errorf("%s written to %s", m[1], m[6])
		}
	}
	want := []string{"sandgate.local/authapi:v0.3.0", "sandgate.local/nodeproxy:v0.3.0", "sandgate.local/agent-standin:v0.3.0",
		"sandgate.local/sandbox-controller-standin:v0.3.0", "sandgate.local/pause:v0.3.0", "sandgate.local/busybox:v0.3.0"}
	if !slices.Equal(refs, want) {
		t.Errorf("references %q, want %q\noutput:\n%s", refs, want, first)
	}
	if !regexp.MustCompile(`(?m)^coredns +skipped: no binary at \S+/coredns \(pass --bin coredns=PATH`).MatchString(first) {
		t.Errorf("no skip line for coredns:\n%s", first)
	}
	if second := buildImages(t, bins, t.TempDir()); !sameDigests(line.FindAllStringSubmatch(second, -1), built) {
		t.Errorf("a second run gave other digests:\n%s\nfirst:\n%s", second, first)
	}

	for _, tt := range []struct {
		name, user string
		entrypoint []string
		cmd        []string
		member     string
	}{
		{name: "nodeproxy", user: "0:0", entrypoint: []string{"/nodeproxy"}, member: "nodeproxy"},
		{name: "authapi", user: "65532:65532", entrypoint: []string{"/authapi"}, member: "authapi"},
		{name: "pause", user: "65535:65535", entrypoint: []string{"/pause"}, member: "pause"},
		{name: "agent-standin", user: "1000:1000", entrypoint: []string{"/agent-standin"}, cmd: []string{"web", "--host", "0.0.0.0", "--port", "3080"}, member: "agent-standin"},
		{name: "busybox", user: "0:0", entrypoint: []string{"/bin/sh"}, member: "bin/busybox"},
	} {
		img := testkit.LoadImage(t, filepath.Join(out, tt.name+".tar"), "sandgate.local/"+tt.name+":v0.3.0")
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		c := cf.Config
		if c.User != tt.user || !slices.Equal(c.Entrypoint, tt.entrypoint) || !slices.Equal(c.Cmd, tt.cmd) ||
			c.Labels["org.opencontainers.image.version"] != "v0.3.0" || c.Labels["org.opencontainers.image.revision"] != "abc123" ||
			c.Labels["org.opencontainers.image.title"] != tt.name || !slices.Contains(c.Env, defaultPath) {
			t.Errorf("%s config %+v", tt.name, c)
		}
		members := layerHeaders(t, img)
		if h, ok := members[tt.member]; !ok || h.Mode != 0o755 || h.Typeflag != tar.TypeReg {
			t.Errorf("%s: binary %s is %+v", tt.name, tt.member, h)
		}
	}
	if sh := layerHeaders(t, testkit.LoadImage(t, filepath.Join(out, "busybox.tar"), "sandgate.local/busybox:v0.3.0"))["bin/sh"]; sh.Typeflag != tar.TypeSymlink || sh.Linkname != "busybox" {
		t.Errorf("busybox /bin/sh is %+v, want a symlink to busybox", sh)
	}
}

func sameDigests(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i][3] != b[i][3] || a[i][5] != b[i][5] {
			return false
		}
	}
	return true
}

func layerHeaders(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	out := map[string]*tar.Header{}
	for _, e := range testkit.OnlyLayer(t, img) {
		out[e.Header.Name] = e.Header
	}
	return out
}

func TestExtraBinary(t *testing.T) {
	bins := binDir(t, "authapi", "nodeproxy", "agent-standin", "sandbox-controller-standin", "pause", "busybox")
	coredns := filepath.Join(binDir(t, "coredns-1.12"), "coredns-1.12")
	got := buildImages(t, bins, t.TempDir(), "--bin", "coredns="+coredns, "--require", "coredns")
	if !regexp.MustCompile(`(?m)^coredns +sandgate.local/coredns:v0.3.0 sha256:`).MatchString(got) {
		t.Errorf("coredns not built from --bin:\n%s", got)
	}
}

func TestFailures(t *testing.T) {
	bins := binDir(t, "authapi", "nodeproxy", "agent-standin", "sandbox-controller-standin", "pause", "busybox")
	dynamic := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(dynamic, fakeELF(true), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{name: "required missing", args: []string{"--require", "coredns"}, code: 1, want: []string{"coredns: no binary at", "pass --bin coredns=PATH"}},
		{name: "dynamic", args: []string{"--bin", "pause=" + dynamic}, code: 1, want: []string{"dynamically linked", "CGO_ENABLED=0"}},
		{name: "not ELF", args: []string{"--bin", "pause=" + filepath.Join(bins, "..")}, code: 1, want: []string{"pause: read binary"}},
		{name: "usage", args: []string{"--bin", "nginx=/x", "--require", "redis", "--version", "v 1", "--source-date-epoch", "-5"}, code: 2,
			want: []string{"--bin nginx: no such image", "--require redis: no such image", `reference "sandgate.local/authapi:v 1"`, "negative"}},
		{name: "bad bin flag", args: []string{"--bin", "pause"}, code: 2, want: []string{"want name=path"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--bin-dir", bins, "--out-dir", t.TempDir(), "--bin", "busybox=" + filepath.Join(bins, "busybox")}, tt.args...)
			var stdout, stderr bytes.Buffer
			if code := run(args, testkit.Env(nil), &stdout, &stderr); code != tt.code {
				t.Errorf("exit %d, want %d; stderr %s", code, tt.code, stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q lacks %q", stderr.String(), w)
				}
			}
		})
	}
}

func TestSourceDateEpoch(t *testing.T) {
	o, err := load(nil, testkit.Env(map[string]string{"SOURCE_DATE_EPOCH": "1700000000"}), io.Discard)
	if err != nil || o.SourceDateEpoch != 1700000000 {
		t.Errorf("SOURCE_DATE_EPOCH: %d, %v", o.SourceDateEpoch, err)
	}
	o, err = load([]string{"--source-date-epoch", "5"}, testkit.Env(map[string]string{"SOURCE_DATE_EPOCH": "1700000000"}), io.Discard)
	if err != nil || o.SourceDateEpoch != 5 {
		t.Errorf("flag over SOURCE_DATE_EPOCH: %d, %v", o.SourceDateEpoch, err)
	}
	if _, err := load(nil, testkit.Env(map[string]string{"SOURCE_DATE_EPOCH": "yesterday"}), io.Discard); err == nil {
		t.Error("a non-numeric SOURCE_DATE_EPOCH was accepted")
	}
}

// TestKubeRouterCarriesIptablesAndIpset builds the kube-router image and
// finds the tools kube-router runs, with their loader, in its layer.
func TestKubeRouterCarriesIptablesAndIpset(t *testing.T) {
	for _, p := range []string{"/usr/sbin/xtables-nft-multi", "/usr/sbin/ipset"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("needs Debian's iptables and ipset (apt-get install -y iptables ipset): %v", err)
		}
	}
	bins := binDir(t, "authapi", "nodeproxy", "agent-standin", "sandbox-controller-standin", "pause", "busybox")
	router := filepath.Join(binDir(t, "kube-router"), "kube-router")
	out := t.TempDir()
	got := buildImages(t, bins, out, "--bin", "kube-router="+router, "--require", "kube-router")
	if !regexp.MustCompile(`(?m)^kube-router +sandgate.local/kube-router:v0.3.0 sha256:`).MatchString(got) {
		t.Fatalf("kube-router not built:\n%s", got)
	}
	hdrs := layerHeaders(t, testkit.LoadImage(t, filepath.Join(out, "kube-router.tar"), "sandgate.local/kube-router:v0.3.0"))
	for _, p := range []string{"usr/local/bin/kube-router", "usr/sbin/xtables-nft-multi", "usr/sbin/ipset", "lib64/ld-linux-x86-64.so.2", "lib/x86_64-linux-gnu/libc.so.6"} {
		if h, ok := hdrs[p]; !ok || h.Typeflag != tar.TypeReg {
			t.Errorf("image has no file %s", p)
		}
	}
	for _, p := range []string{"usr/sbin/iptables", "usr/sbin/iptables-save", "usr/sbin/iptables-restore"} {
		if h, ok := hdrs[p]; !ok || h.Typeflag != tar.TypeSymlink || h.Linkname != "xtables-nft-multi" {
			t.Errorf("%s is %+v, want a symlink to xtables-nft-multi", p, h)
		}
	}
}
