package main

import (
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/sandgate/sandgate/internal/clustertools/ociimage"
)

// image is one image sandgate-images builds: a static binary and how it runs.
type image struct {
	// name is the image's name under the registry, the binary's file name
	// in --bin-dir (unless source says otherwise) and the tarball's name.
	name string
	// source is the binary's default path when it does not come from
	// --bin-dir.
	source string
	// path is where the binary lands in the image.
	path string
	// entrypoint starts the container; nil means path.
	entrypoint []string
	// user runs the entrypoint unless the pod's securityContext says
	// otherwise; it matches what the manifests expect.
	user string
	// cmd, env, workdir, dirs and symlinks complete the image.
	cmd      []string
	env      []string
	workdir  string
	dirs     []ociimage.Dir
	symlinks []ociimage.Symlink
	// hostPrograms and hostPlugins are dynamically linked host files the
	// binary runs (Debian's iptables and ipset for kube-router); they come
	// with their loader and libraries (ociimage.HostClosure). hostPlugins
	// is a glob.
	hostPrograms []string
	hostPlugins  string
	// optional images are skipped when their binary is missing, unless
	// --require names them.
	optional bool
	// hint says how to get the binary when it is missing.
	hint string
}

// defaultPath is the PATH of every image.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// busyboxApplets get /bin symlinks in the busybox image so that a helper
// pod's command finds them without the shell; busybox's shell runs every
// applet itself anyway.
var busyboxApplets = []string{
	"cat", "chmod", "chown", "cp", "df", "du", "echo", "env", "find", "grep", "id", "ln",
	"ls", "mkdir", "mv", "nc", "nslookup", "rm", "rmdir", "sed", "sh", "sleep", "stat", "tar", "test",
	"timeout", "touch",
}

// catalog lists the images in build order. Users follow the manifests:
// nodeproxy runs as root to read root-owned pod log files
// (manifests/daemonset/daemonset.yaml), the agent stand-in as the
// template's uid 1000, pause as Kubernetes' pause image does (65535).
func catalog() []image {
	symlinks := make([]ociimage.Symlink, 0, len(busyboxApplets))
	for _, a := range busyboxApplets {
		symlinks = append(symlinks, ociimage.Symlink{Path: "/bin/" + a, Target: "busybox"})
	}
	node := []ociimage.Dir{
		{Path: "/home/node", Mode: 0o755, UID: 1000, GID: 1000},
		{Path: "/workspace", Mode: 0o755, UID: 1000, GID: 1000},
	}
	return []image{
		{name: "authapi", path: "/authapi", user: "65532:65532", hint: "make static"},
		{name: "nodeproxy", path: "/nodeproxy", user: "0:0", hint: "make static"},
		{
			name: "agent-standin", path: "/agent-standin", user: "1000:1000",
			cmd:     []string{"web", "--host", "0.0.0.0", "--port", "3080"},
			env:     []string{"HOME=/workspace", "DSH_HOME=/home/node/.dsh"},
			workdir: "/workspace", dirs: node, hint: "make static",
		},
		{name: "sandbox-controller-standin", path: "/sandbox-controller-standin", user: "65532:65532", hint: "make static"},
		{name: "pause", path: "/pause", user: "65535:65535", hint: "make static"},
		{name: "coredns", path: "/coredns", user: "0:0", optional: true, hint: "pass --bin coredns=PATH"},
		{name: "kube-network-policies", path: "/bin/netpol", user: "0:0", optional: true, hint: "pass --bin kube-network-policies=PATH"},
		{
			name: "kube-router", path: "/usr/local/bin/kube-router", user: "0:0", optional: true,
			hostPrograms: []string{"/usr/sbin/xtables-nft-multi", "/usr/sbin/ipset"},
			hostPlugins:  "/usr/lib/x86_64-linux-gnu/xtables/*.so",
			symlinks:     iptablesLinks(),
			hint:         "pass --bin kube-router=PATH; needs apt-get install -y iptables ipset",
		},
		{
			name: "busybox", source: "/bin/busybox", path: "/bin/busybox", user: "0:0",
			entrypoint: []string{"/bin/sh"}, symlinks: symlinks, hint: "apt-get install -y busybox-static",
		},
	}
}

// iptablesLinks are the iptables commands, all served by the nftables
// multi-call binary, as Debian's default alternative does.
func iptablesLinks() []ociimage.Symlink {
	var out []ociimage.Symlink
	for _, v := range []string{"iptables", "ip6tables"} {
		for _, suffix := range []string{"", "-save", "-restore"} {
			out = append(out, ociimage.Symlink{Path: "/usr/sbin/" + v + suffix, Target: "xtables-nft-multi"})
		}
	}
	return out
}

// spec returns the image's ociimage.Spec for the binary at source.
func (im image) spec(source string, o Options) (ociimage.Spec, error) {
	entrypoint := im.entrypoint
	if entrypoint == nil {
		entrypoint = []string{im.path}
	}
	files := []ociimage.File{{Source: source, Path: im.path, Mode: fs.FileMode(0o755)}}
	if len(im.hostPrograms) > 0 {
		plugins, err := filepath.Glob(im.hostPlugins)
		if err != nil {
			return ociimage.Spec{}, fmt.Errorf("list %s: %w", im.hostPlugins, err)
		}
		host, err := ociimage.HostClosure(im.hostPrograms, plugins)
		if err != nil {
			return ociimage.Spec{}, fmt.Errorf("collect host programs (%s): %w", im.hint, err)
		}
		files = append(files, host...)
	}
	return ociimage.Spec{
		Files:    files,
		Dirs:     im.dirs,
		Symlinks: im.symlinks,
		Epoch:    o.epoch(),
		Config: ociimage.Config{
			Entrypoint: entrypoint,
			Cmd:        im.cmd,
			Env:        append([]string{defaultPath}, im.env...),
			User:       im.user,
			WorkingDir: im.workdir,
			Source:     o.SourceURL,
			Revision:   o.Revision,
			Version:    o.Version,
			Title:      im.name,
		},
	}, nil
}
