package localcluster

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupRoot is where the cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// hierarchies lists the mounted cgroup hierarchies' directories: every v1
// controller (and the named systemd one) and, on a hybrid host, the v2
// tree.
func hierarchies() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if sep < 0 || sep+1 >= len(fields) || len(fields) < 5 {
			continue
		}
		if t := fields[sep+1]; (t == "cgroup" || t == "cgroup2") && strings.HasPrefix(fields[4], cgroupRoot+"/") {
			dirs = append(dirs, fields[4])
		}
	}
	return dirs, sc.Err()
}

// nodeCgroup is node n's cgroup path below each hierarchy: the kubelet's
// cgroupRoot. Its processes (containerd, shims, kubelet, kube-proxy) live
// in the system child, its pods in the kubelet's own children.
func nodeCgroup(n string) string { return "/" + cgroupParent + "/" + n }

// prepareCgroups creates the node's cgroup and its system child in every
// hierarchy, cpuset files copied from the parent as v1 requires.
func prepareCgroups(n string) error {
	hs, err := hierarchies()
	if err != nil {
		return err
	}
	for _, h := range hs {
		dir := h
		for _, part := range []string{cgroupParent, n, "system"} {
			dir = filepath.Join(dir, part)
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("create cgroup %s: %w", dir, err)
			}
			if filepath.Base(h) == "cpuset" {
				for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
					v, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f))
					if err != nil {
						return fmt.Errorf("read %s: %w", f, err)
					}
					if err := os.WriteFile(filepath.Join(dir, f), v, 0o644); err != nil {
						return fmt.Errorf("write %s in %s: %w", f, dir, err)
					}
				}
			}
		}
	}
	return nil
}

// joinSystemCgroup moves this process into node n's system cgroup in every
// hierarchy, so everything it starts can be found and killed by cgroup.
func joinSystemCgroup(n string) error {
	hs, err := hierarchies()
	if err != nil {
		return err
	}
	pid := []byte(strconv.Itoa(os.Getpid()))
	for _, h := range hs {
		procs := filepath.Join(h, cgroupParent, n, "system", "cgroup.procs")
		if err := os.WriteFile(procs, pid, 0o644); err != nil {
			return fmt.Errorf("join %s: %w", procs, err)
		}
	}
	return nil
}

// cgroupPids lists the processes in every cgroup below the cluster's
// parent, in any hierarchy.
func cgroupPids() ([]int, error) {
	hs, err := hierarchies()
	if err != nil {
		return nil, err
	}
	seen := map[int]bool{}
	for _, h := range hs {
		root := filepath.Join(h, cgroupParent)
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return fs.SkipAll
				}
				return err
			}
			if d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return nil
			}
			for _, f := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(f); err == nil {
					seen[pid] = true
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list processes under %s: %w", root, err)
		}
	}
	pids := make([]int, 0, len(seen))
	for p := range seen {
		pids = append(pids, p)
	}
	slices.Sort(pids)
	return pids, nil
}

// killCgroups kills every process below the cluster's cgroups until none
// is left, then removes the cgroups, deepest first.
func killCgroups(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pids, err := cgroupPids()
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v survive SIGKILL", pids)
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	hs, err := hierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, h := range hs {
		root := filepath.Join(h, cgroupParent)
		var dirs []string
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for _, d := range slices.Backward(dirs) {
			if err := os.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}
