package main

import (
	"context"
	"debug/buildinfo"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/localcluster"
)

// printVersions names every real component the cluster runs with the
// version it reports itself.
func printVersions(ctx context.Context, w io.Writer, b localcluster.Binaries) {
	bin := func(n string) string { return filepath.Join(b.Dir, n) }
	for _, c := range []struct {
		name string
		cmd  []string
	}{
		{"etcd", []string{bin("etcd"), "--version"}},
		{"kube-apiserver", []string{bin("kube-apiserver"), "--version"}},
		{"kube-controller-manager", []string{bin("kube-controller-manager"), "--version"}},
		{"kube-scheduler", []string{bin("kube-scheduler"), "--version"}},
		{"kubelet", []string{bin("kubelet"), "--version"}},
		{"kube-proxy", []string{bin("kube-proxy"), "--version"}},
		{"kubectl", []string{bin("kubectl"), "version", "--client"}},
		{"containerd", []string{bin("containerd"), "--version"}},
		{"runc", []string{b.Runc, "--version"}},
		{"CNI bridge, host-local, portmap", []string{"dpkg-query", "-W", "-f=containernetworking-plugins ${Version} (Debian)", "containernetworking-plugins"}},
		{"CoreDNS", []string{bin("coredns"), "-version"}},
		{"local-path-provisioner", []string{bin("local-path-provisioner"), "--version"}},
		{"iptables", []string{"iptables", "--version"}},
	} {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		out, _ := exec.CommandContext(ctx, c.cmd[0], c.cmd[1:]...).CombinedOutput()
		cancel()
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		fmt.Fprintf(w, "component %-32s %s\n", c.name, first)
	}
	for _, e := range [][2]string{
		{"kube-network-policies", "sigs.k8s.io/kube-network-policies"},
		{"kube-router", "github.com/cloudnativelabs/kube-router/v2"},
	} {
		fmt.Fprintf(w, "component %-32s %s\n", e[0], moduleVersion(bin(e[0]), e[1]))
	}
}

// moduleVersion is the version of module mod that the Go binary at path
// was built from, as its build information records it.
func moduleVersion(path, mod string) string {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return "not built: " + err.Error()
	}
	for _, m := range append([]*debug.Module{&info.Main}, info.Deps...) {
		if m.Path == mod {
			return mod + " " + m.Version
		}
	}
	return "unknown"
}
