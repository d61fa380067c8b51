// Package cluster wires the simulated agent-sandbox cluster: the stand-in
// controller (internal/testing/sim/controller) and the stand-in kubelet with N nodes
// (internal/testing/sim/kubelet) against one API server. It exists only for
// sandgate's tests and the local demo; no production binary may import it.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/testing/sim/agentapp"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/sim/kubelet"
)

// NodeLabel marks the Nodes of one simulated cluster; its value is the
// cluster's Name. The controller schedules only onto those nodes.
const NodeLabel = "sim.sandgate.dev/cluster"

// DefaultName names a cluster, and its nodes <name>-1, <name>-2, ...
const DefaultName = "sim"

// Options configures a simulated cluster.
type Options struct {
	// Config reaches the API server, which must serve the agent-sandbox
	// CRDs. Required.
	Config *rest.Config
	// Name tells simulated clusters on one API server apart: it prefixes
	// node names and labels the nodes. Empty means "sim".
	Name string
	// Namespaces are watched by the controller; empty means all.
	Namespaces []string
	// Nodes is the number of simulated nodes; zero means 2.
	Nodes int
	// LogDir holds each node's pod log root, <LogDir>/<node>. Required,
	// absolute.
	LogDir string
	// DataDir holds the directories that stand in for volumes. Required,
	// absolute.
	DataDir string
	// Delays slow down warm adoption, cold start and resume.
	Delays controller.Delays
	// Release is the agent-sandbox release the controller behaves as;
	// empty means controller.ReleaseV1.
	Release controller.Release
	// LogMaxSize and LogMaxFiles set container log rotation; zero means
	// the kubelet's defaults (10 MiB, 5 files).
	LogMaxSize  int64
	LogMaxFiles int
	// App is the template of every pod's agent app (see kubelet.Options.App).
	App agentapp.Options
	// Logger receives the simulation's logs; nil discards them.
	Logger *slog.Logger
}

// Cluster is a running simulated cluster.
type Cluster struct {
	// Controller is the stand-in agent-sandbox controller.
	Controller *controller.Controller
	// Kubelet runs the simulated nodes.
	Kubelet *kubelet.Kubelet

	cancel   context.CancelFunc
	done     chan error
	stopOnce sync.Once
	stopErr  error
}

// Start starts the controller and the kubelet and returns once both have
// synced their caches and the nodes are registered. Stop ends them.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	if o.Config == nil {
		return nil, errors.New("cluster options: config is required")
	}
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Nodes == 0 {
		o.Nodes = 2
	}
	for _, dir := range []string{o.LogDir, o.DataDir} {
		if !filepath.IsAbs(dir) {
			return nil, fmt.Errorf("cluster options: %q is not an absolute path", dir)
		}
	}
	core, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return nil, fmt.Errorf("build core client: %w", err)
	}
	sandboxes, err := sandboxapi.NewForConfig(o.Config)
	if err != nil {
		return nil, fmt.Errorf("build sandbox client: %w", err)
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("cluster", o.Name)
	nodeLabels := map[string]string{NodeLabel: o.Name}
	ctrl, err := controller.New(controller.Options{
		Client: core, Sandboxes: sandboxes, Namespaces: o.Namespaces,
		NodeSelector: nodeLabels, Delays: o.Delays, Release: o.Release, Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	kl, err := kubelet.New(kubelet.Options{
		Client: core, Nodes: o.Nodes, NodePrefix: o.Name, NodeLabels: nodeLabels,
		Namespaces: o.Namespaces, LogDir: o.LogDir, DataDir: o.DataDir,
		LogMaxSize: o.LogMaxSize, LogMaxFiles: o.LogMaxFiles, App: o.App, Logger: logger,
	})
	if err != nil {
		return nil, err
	}

	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &Cluster{Controller: ctrl, Kubelet: kl, cancel: cancel, done: make(chan error, 2)}
	go func() { c.done <- wrap("kubelet", kl.Run(runCtx)) }()
	go func() { c.done <- wrap("controller", ctrl.Run(runCtx)) }()
	for _, ready := range []<-chan struct{}{kl.Ready(), ctrl.Ready()} {
		select {
		case <-ready:
		case err := <-c.done:
			c.done <- err
			return nil, errors.Join(err, c.Stop())
		case <-ctx.Done():
			return nil, errors.Join(ctx.Err(), c.Stop())
		case <-time.After(time.Minute):
			return nil, errors.Join(errors.New("simulated cluster not ready within a minute"), c.Stop())
		}
	}
	return c, nil
}

// Stop ends the controller and the kubelet (every app stops, the Node
// objects go) and waits for them. Later calls return the same result.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.cancel()
		c.stopErr = errors.Join(<-c.done, <-c.done)
	})
	return c.stopErr
}

func wrap(what string, err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
