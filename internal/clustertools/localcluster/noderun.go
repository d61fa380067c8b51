package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
)

// NodeSpec is what the runner of one node reads from <node dir>/node.json:
// the binaries it starts and the image tarballs it imports.
type NodeSpec struct {
	Name       string   `json:"name"`
	IP         string   `json:"ip"`
	Dir        string   `json:"dir"`
	Containerd string   `json:"containerd"`
	Ctr        string   `json:"ctr"`
	Kubelet    string   `json:"kubelet"`
	KubeProxy  string   `json:"kubeProxy"`
	BinPath    string   `json:"binPath"`
	Images     []string `json:"images"`
}

// nodeMounts are the per-node directories bind-mounted over the host's
// paths inside the node's mount namespace: kubelets, runtimes and CNI
// plugins use fixed paths whatever their flags say, and two kubelets that
// share /var/log/pods delete each other's pod logs.
var nodeMounts = []struct{ source, target string }{
	{"mounts/log-pods", "/var/log/pods"},
	{"mounts/log-containers", "/var/log/containers"},
	{"mounts/kubelet", "/var/lib/kubelet"},
	{"mounts/cni", "/var/lib/cni"},
	{"mounts/run-containerd", "/run/containerd"},
	{"mounts/local-path", "/opt/local-path-provisioner"},
}

// RunNode runs one node until ctx ends. It must be started in the node's
// network namespace and in a mount namespace of its own (make cluster
// starts it through nsenter and unshare): it joins the node's cgroup,
// mounts the node's directories, starts containerd, imports the images,
// and starts the kubelet and kube-proxy.
func RunNode(ctx context.Context, dir string, log *slog.Logger) error {
	data, err := os.ReadFile(filepath.Join(dir, "node.json"))
	if err != nil {
		return fmt.Errorf("read the node spec: %w", err)
	}
	var s NodeSpec
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("parse the node spec: %w", err)
	}
	if err := joinSystemCgroup(s.Name); err != nil {
		return err
	}
	if err := mountNodeDirs(s.Dir); err != nil {
		return err
	}
	os.Setenv("PATH", s.BinPath)
	logs := filepath.Join(s.Dir, "logs")
	containerd, err := controlplane.StartProcess("containerd", logs, s.Containerd, nil,
		"--config", filepath.Join(s.Dir, "config", "containerd.toml"))
	if err != nil {
		return err
	}
	procs := []*controlplane.Process{containerd}
	defer func() {
		for _, p := range procs {
			p.Stop(10 * time.Second)
		}
	}()
	if err := waitSocket(ctx, "/run/containerd/containerd.sock", containerd); err != nil {
		return err
	}
	for _, img := range s.Images {
		start := time.Now()
		if out, err := run(ctx, s.Ctr, "--address", "/run/containerd/containerd.sock", "-n", "k8s.io", "images", "import", "--local", img); err != nil {
			return fmt.Errorf("import %s: %w (%s)", filepath.Base(img), err, out)
		}
		log.Info("image imported", "image", filepath.Base(img), "took", time.Since(start).Round(time.Millisecond))
	}
	cfg := func(name string) string { return filepath.Join(s.Dir, "config", name) }
	kubelet, err := controlplane.StartProcess("kubelet", logs, s.Kubelet, nil,
		"--config="+cfg("kubelet.yaml"), "--kubeconfig="+cfg("kubelet.kubeconfig"),
		"--root-dir=/var/lib/kubelet", "--node-ip="+s.IP, "--hostname-override="+s.Name, "--v=1")
	if err != nil {
		return err
	}
	procs = append(procs, kubelet)
	proxy, err := controlplane.StartProcess("kube-proxy", logs, s.KubeProxy, nil, "--config="+cfg("kube-proxy.yaml"), "--v=1")
	if err != nil {
		return err
	}
	procs = append(procs, proxy)
	log.Info("node running", "node", s.Name)
	select {
	case <-ctx.Done():
		return nil
	case <-containerd.Done():
		return fmt.Errorf("containerd exited: %s", containerd.LogTail())
	case <-kubelet.Done():
		return fmt.Errorf("kubelet exited: %s", kubelet.LogTail())
	case <-proxy.Done():
		return fmt.Errorf("kube-proxy exited: %s", proxy.LogTail())
	}
}

// mountNodeDirs makes every mount private to this namespace, then binds
// the node's own directories over the host's.
func mountNodeDirs(dir string) error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the node's mounts private: %w", err)
	}
	for _, m := range nodeMounts {
		src := filepath.Join(dir, m.source)
		if err := os.MkdirAll(src, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", src, err)
		}
		if err := os.MkdirAll(m.target, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", m.target, err)
		}
		if err := syscall.Mount(src, m.target, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s over %s: %w", src, m.target, err)
		}
	}
	return nil
}

// waitSocket waits for a unix socket to appear while p runs.
func waitSocket(ctx context.Context, path string, p *controlplane.Process) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-p.Done():
			return fmt.Errorf("%s exited during start: %s", p.Name(), p.LogTail())
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("wait for %s", path), ctx.Err())
		case <-t.C:
		}
	}
}
