// Command sandbox-controller-standin is a STAND-IN for the agent-sandbox
// controller (kubernetes-sigs/agent-sandbox, v1beta1 API), which is not
// available as a Go module: it runs sandgate's simulated controller
// (internal/testing/sim/controller) as a process against a real cluster, for test
// clusters without the real one. It reconciles Sandboxes, SandboxClaims and
// SandboxWarmPools and leaves pod placement to the kube-scheduler.
package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/settings"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
)

func main() { settings.Main(run) }

// run is main without the process: 0 after ctx ends, 1 on failure, 2 on a
// usage error.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, err := load(args, getenv, stdout)
	return settings.Serve("sandbox-controller-standin", stderr, err, o.Validate, o.LogLevel, func(log *slog.Logger) error {
		return serve(ctx, o, log)
	})
}

// serve runs the controller until ctx ends.
func serve(ctx context.Context, o Options, log *slog.Logger) error {
	kube, sb, err := sandboxapi.NewClients(o.Kubeconfig, "sandgate-sandbox-controller-standin")
	if err != nil {
		return err
	}
	ctrl, err := controller.New(o.controllerOptions(kube, sb, log))
	if err != nil {
		return err
	}
	log.Info("starting the stand-in agent-sandbox controller", "namespaces", o.namespaces(), "cluster_domain", o.ClusterDomain, "release", o.Release)
	return ctrl.Run(ctx)
}
