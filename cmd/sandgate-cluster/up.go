package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/clusterinstall"
	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
	"github.com/sandgate/sandgate/internal/clustertools/localcluster"
)

// upOptions are up's flags.
type upOptions struct {
	nodes                       int
	data, binDir, staticDir     string
	imagesDir, registry         string
	version, manifests, crds    string
	readyFile, logsDir          string
	controlSocket               string
	idleTimeout, reportInterval time.Duration
}

func (o *upOptions) parse(args []string, getenv func(string) string, stderr io.Writer) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.nodes, "nodes", 2, "number of nodes")
	fs.StringVar(&o.data, "data", localcluster.DefaultPaths.Data, "the cluster's data directory (removed at the end)")
	fs.StringVar(&o.binDir, "bin-dir", controlplane.DefaultCacheDir(os.Getenv), "Kubernetes, etcd, containerd and local-path-provisioner binaries (make cluster-tools)")
	fs.StringVar(&o.staticDir, "static-dir", "bin/static", "sandgate's static binaries (make static), for the agent-sandbox controller stand-in")
	fs.StringVar(&o.imagesDir, "images-dir", "bin/images", "image tarballs every node imports (make images)")
	fs.StringVar(&o.registry, "registry", "sandgate.local", "registry part of the images' names")
	fs.StringVar(&o.version, "version", "dev", "tag of the images")
	fs.StringVar(&o.manifests, "manifests", "manifests", "the repository's manifests directory")
	fs.StringVar(&o.crds, "crds", getenv("AGENT_SANDBOX_CRDS"), "directory of the agent-sandbox CRDs to apply, such as upstream's own (default $AGENT_SANDBOX_CRDS, else the manifests' crds/)")
	fs.StringVar(&o.readyFile, "ready-file", "", "write the entries as JSON here once everything is ready")
	fs.StringVar(&o.logsDir, "logs-dir", "", "copy every component's log here when the cluster stops")
	fs.StringVar(&o.controlSocket, "control-socket", "", controlHelp)
	fs.DurationVar(&o.idleTimeout, "idle-timeout", 0, "replace the shipped IDLE_TIMEOUT (0 keeps it)")
	fs.DurationVar(&o.reportInterval, "report-interval", 2*time.Second, "REPORT_INTERVAL with --idle-timeout")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w %q", errArgs, fs.Args())
	}
	return nil
}

// up brings the cluster up, installs sandgate, prints the entries and
// serves until ctx ends.
func up(ctx context.Context, o upOptions, stdout io.Writer, log *slog.Logger) (err error) {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this binary: %w", err)
	}
	tars, err := filepath.Glob(filepath.Join(o.imagesDir, "*.tar"))
	if err != nil || len(tars) == 0 {
		return fmt.Errorf("no image tarballs in %s: run make images", o.imagesDir)
	}
	for i, t := range tars {
		if tars[i], err = filepath.Abs(t); err != nil {
			return fmt.Errorf("locate %s: %w", t, err)
		}
	}
	manifests, err := filepath.Abs(o.manifests)
	if err != nil {
		return fmt.Errorf("locate the manifests: %w", err)
	}
	crds := filepath.Join(manifests, "crds")
	if o.crds != "" {
		if crds, err = filepath.Abs(o.crds); err != nil {
			return fmt.Errorf("locate the CRDs: %w", err)
		}
	}
	ref := func(name string) string { return o.registry + "/" + name + ":" + o.version }
	refIfBuilt := func(name string) string {
		if _, err := os.Stat(filepath.Join(o.imagesDir, name+".tar")); err != nil {
			return ""
		}
		return ref(name)
	}
	bins := localcluster.Binaries{Dir: o.binDir, Self: self, Runc: "/usr/sbin/runc", CNIDir: "/usr/lib/cni"}
	printVersions(ctx, stdout, bins)
	started := time.Now()
	c, err := localcluster.Up(ctx, localcluster.Options{
		Nodes: o.nodes, Paths: localcluster.Paths{Data: o.data}, Binaries: bins,
		Images: localcluster.Images{Tarballs: tars, Pause: ref("pause"), CoreDNS: ref("coredns"), Busybox: ref("busybox"),
			NetworkPolicies: refIfBuilt("kube-network-policies"), KubeRouter: refIfBuilt("kube-router")},
		CRDDir: crds, CRDSource: controlplane.CRDSourceOf(crds, filepath.Join(manifests, "crds")), Logger: log,
	})
	if err != nil {
		return err
	}
	defer func() {
		if o.logsDir != "" {
			copyLogs(c.Dir(), o.logsDir)
		}
		err = errors.Join(err, c.Stop(context.WithoutCancel(ctx)))
		if err == nil {
			fmt.Fprintln(stdout, "cluster removed; nothing of it is left on this machine")
		}
	}()
	fmt.Fprintf(stdout, "cluster up in %s: nodes %s\n", time.Since(started).Round(time.Millisecond), strings.Join(c.NodeNames(), ", "))
	ctrl := &standin{args: []string{"--kubeconfig=" + c.Kubeconfig, "--namespace=sandgate"},
		run: func(args ...string) (*controlplane.Process, error) {
			return c.Run("sandbox-controller-standin", filepath.Join(o.staticDir, "sandbox-controller-standin"), args...)
		}}
	if err := ctrl.start(""); err != nil {
		return err
	}
	if o.controlSocket != "" {
		stopControl, err := serveControl(ctx, o.controlSocket, ctrl)
		if err != nil {
			return err
		}
		defer stopControl()
	}
	installStart := time.Now()
	hosts := append(c.NodeIPs(), "localhost")
	inst, err := clusterinstall.Install(ctx, c.Kubectl, clusterinstall.Options{
		Manifests: manifests, Dir: c.Dir(), Registry: o.registry, Version: o.version, Hosts: hosts,
		IdleTimeout: o.idleTimeout, ReportInterval: o.reportInterval,
	})
	if err != nil {
		return err
	}
	e := clusterinstall.Entries{Nodes: c.NodeNames(), NodeIPs: c.NodeIPs(), CAFile: inst.CAFile, Kubeconfig: c.Kubeconfig,
		Kubectl: filepath.Join(o.binDir, "kubectl"), Dir: c.Dir(), PolicyEnforcer: c.PolicyEnforcer, ControlSocket: o.controlSocket}
	for _, ip := range c.NodeIPs() {
		e.URLs = append(e.URLs, "https://"+ip+":30443/")
	}
	installed := time.Now()
	serveCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := clusterinstall.WaitServing(serveCtx, e.URLs, e.CAFile); err != nil {
		return fmt.Errorf("wait for the entries: %w", err)
	}
	fmt.Fprintf(stdout, "sandgate installed from %s in %s (images %s/*:%s; overlay applied: %s); every entry answered %s after its workloads were ready\n",
		o.manifests, installed.Sub(installStart).Round(time.Millisecond), o.registry, o.version, inst.Overlay, time.Since(installed).Round(time.Millisecond))
	if c.PolicyEnforcer != "" {
		fmt.Fprintln(stdout, "NetworkPolicies: applied and enforced by "+c.PolicyEnforcer)
	} else {
		fmt.Fprintln(stdout, "NetworkPolicies: applied, NOT enforced (images in "+o.imagesDir+")")
	}
	if c.PolicyNote != "" {
		fmt.Fprintln(stdout, "NetworkPolicy enforcer choice: "+c.PolicyNote)
	}
	for i, u := range e.URLs {
		fmt.Fprintf(stdout, "entry of %s: %s\n", e.Nodes[i], u)
	}
	if o.readyFile != "" {
		data, _ := json.Marshal(e)
		if err := os.WriteFile(o.readyFile, data, 0o644); err != nil {
			return fmt.Errorf("write the ready file: %w", err)
		}
	}
	fmt.Fprintf(stdout, "CA of the entries' certificate: %s\nkubectl: %s --kubeconfig=%s get pods -A\nCtrl-C removes the cluster.\n", e.CAFile, e.Kubectl, e.Kubeconfig)
	<-ctx.Done()
	fmt.Fprintln(stdout, "stopping: removing the cluster")
	return nil
}

// copyLogs copies every *.log below dir into dst, keeping the relative
// paths, for a test's artifacts.
func copyLogs(dir, dst string) {
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".log") || strings.Contains(path, "/mounts/") {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		out := filepath.Join(dst, rel)
		if os.MkdirAll(filepath.Dir(out), 0o755) == nil {
			_ = os.WriteFile(out, data, 0o644)
		}
		return nil
	})
}
