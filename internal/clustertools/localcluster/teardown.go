package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Down removes everything a cluster made under p, running or killed: its
// processes (host processes by their command line, node processes by
// cgroup), the nodes' namespaces, the bridge and veths with their routes,
// the guard table, the saved sysctls and the data directory. It does
// nothing where nothing is left.
func Down(ctx context.Context, p Paths) error {
	var errs []error
	killByCommandLine(p.Data)
	if err := killCgroups(30 * time.Second); err != nil {
		errs = append(errs, err)
	}
	netns, _ := run(ctx, "ip", "netns", "list")
	for _, line := range strings.Split(netns, "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], netnsPrefix) {
			if _, err := run(ctx, "ip", "netns", "del", f[0]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, l := range ourLinks(ctx) {
		// A veth goes with its peer's namespace, a moment after the
		// namespace is deleted: only a link that stays is an error.
		if _, err := run(ctx, "ip", "link", "del", l); err != nil && slices.Contains(ourLinks(ctx), l) {
			errs = append(errs, err)
		}
	}
	if out, _ := run(ctx, "nft", "list", "tables"); strings.Contains(out, "inet "+nftTable) {
		if _, err := run(ctx, "nft", "delete", "table", "inet", nftTable); err != nil {
			errs = append(errs, err)
		}
	}
	for _, m := range mountsUnder(p.Data) {
		if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unmount %s: %w", m, err))
		}
	}
	if err := restoreState(p); err != nil {
		errs = append(errs, err)
	}
	if err := os.RemoveAll(p.Data); err != nil {
		errs = append(errs, fmt.Errorf("remove %s: %w", p.Data, err))
	}
	return errors.Join(errs...)
}

// Leftovers lists what a cluster under p left on the machine: nothing, after
// Down.
func Leftovers(ctx context.Context, p Paths) []string {
	var left []string
	for _, pid := range pidsByCommandLine(p.Data) {
		left = append(left, fmt.Sprintf("process %d (%s)", pid, commandLine(pid)))
	}
	if pids, _ := cgroupPids(); len(pids) > 0 {
		left = append(left, fmt.Sprintf("processes in the cluster's cgroups: %v", pids))
	}
	if hs, err := hierarchies(); err == nil {
		for _, h := range hs {
			if _, err := os.Stat(filepath.Join(h, cgroupParent)); err == nil {
				left = append(left, "cgroup "+filepath.Join(h, cgroupParent))
			}
		}
	}
	if out, _ := run(ctx, "ip", "netns", "list"); strings.Contains(out, netnsPrefix) {
		left = append(left, "network namespaces: "+strings.TrimSpace(out))
	}
	for _, l := range ourLinks(ctx) {
		left = append(left, "link "+l)
	}
	if out, _ := run(ctx, "nft", "list", "tables"); strings.Contains(out, nftTable) {
		left = append(left, "nftables table "+nftTable)
	}
	if out, _ := run(ctx, "ip", "route", "show"); strings.Contains(out, Bridge) || strings.Contains(out, "10.244.") || strings.Contains(out, "10.96.") {
		left = append(left, "routes: "+strings.TrimSpace(out))
	}
	if out, err := run(ctx, "iptables-save"); err == nil && (strings.Contains(out, "KUBE-") || strings.Contains(out, "CNI-")) {
		left = append(left, "iptables rules of kube-proxy or CNI on the host")
	}
	for _, m := range mountsUnder(p.Data) {
		left = append(left, "mount "+m)
	}
	for _, m := range nodeMounts {
		if isMountPoint(m.target) {
			left = append(left, "mount "+m.target)
		}
	}
	if _, err := os.Stat(p.Data); err == nil {
		left = append(left, "directory "+p.Data)
	}
	return left
}

// ourLinks lists the host's links this package creates: the bridge and the
// host ends of the veth pairs.
func ourLinks(ctx context.Context) []string {
	out, _ := run(ctx, "ip", "-o", "link", "show")
	var links []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if name == Bridge || strings.HasPrefix(name, vethPrefix) {
			links = append(links, name)
		}
	}
	return links
}

// killByCommandLine kills every process whose command line names dir: the
// host processes of a run that was killed before it could stop them.
func killByCommandLine(dir string) {
	for range 50 {
		pids := pidsByCommandLine(dir)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func pidsByCommandLine(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if strings.Contains(commandLine(pid), dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func commandLine(pid int) string {
	data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return string(bytes.ReplaceAll(bytes.TrimRight(data, "\x00"), []byte{0}, []byte{' '}))
}

// mountsUnder lists the host's mount points at or below dir, deepest
// first.
func mountsUnder(dir string) []string {
	var ms []string
	for _, m := range mountPoints() {
		if m == dir || strings.HasPrefix(m, dir+"/") {
			ms = append([]string{m}, ms...)
		}
	}
	return ms
}

func isMountPoint(path string) bool {
	for _, m := range mountPoints() {
		if m == path {
			return true
		}
	}
	return false
}

func mountPoints() []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var ms []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 4 {
			ms = append(ms, f[4])
		}
	}
	return ms
}
