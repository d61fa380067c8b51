package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/settings"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
)

// Options is every setting of sandbox-controller-standin, as the
// environment and flags give it.
type Options struct {
	// Kubeconfig is the kubeconfig file; empty uses the in-cluster
	// ServiceAccount.
	Kubeconfig string
	// Namespaces is a comma-separated list of watched namespaces; empty
	// watches all.
	Namespaces string
	// ClusterDomain ends each Sandbox's status.serviceFQDN.
	ClusterDomain string
	// Workers is the number of reconcile workers.
	Workers int
	// Release is the agent-sandbox release to behave as.
	Release string
	// LogLevel is debug, info, warn or error.
	LogLevel string

	problems []error // values the environment or flags could not parse
}

// Defaults returns the settings before the environment and flags.
func Defaults() Options {
	return Options{ClusterDomain: controller.DefaultClusterDomain, Workers: 2, Release: string(controller.ReleaseV1), LogLevel: "info"}
}

func (o *Options) settings() []settings.Setting {
	return []settings.Setting{
		settings.Kubeconfig(&o.Kubeconfig),
		settings.Var("namespace", "NAMESPACE", "comma-separated namespaces to watch; empty watches all", settings.String(&o.Namespaces)),
		settings.Var("cluster-domain", "CLUSTER_DOMAIN", "cluster DNS domain that ends status.serviceFQDN", settings.String(&o.ClusterDomain)),
		settings.Var("workers", "WORKERS", "reconcile workers", settings.Int(&o.Workers)),
		settings.Var("release", "RELEASE", fmt.Sprintf("agent-sandbox release to behave as: %s, or %s for the v0.5 behaviour", controller.ReleaseV1, controller.ReleaseV05), settings.String(&o.Release)),
		settings.Var("log-level", "LOG_LEVEL", "debug, info, warn or error", settings.String(&o.LogLevel)),
	}
}

// load starts from Defaults, lets the environment set them and the flags
// override them. Unparsable values are kept for Validate; only flag syntax
// errors (and --help) return an error here.
func load(args []string, getenv func(string) string, usageOut io.Writer) (Options, error) {
	o := Defaults()
	var err error
	o.problems, err = settings.Load("sandbox-controller-standin", o.settings(), args, getenv, usageOut, func() { usage(usageOut) })
	return o, err
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: sandbox-controller-standin [flags]

A STAND-IN for the agent-sandbox controller (kubernetes-sigs/agent-sandbox,
v1beta1), which is not available as a Go module: sandgate's simulated
controller (internal/testing/sim/controller) run against a real cluster, for test
clusters only. It reconciles Sandboxes, SandboxClaims and SandboxWarmPools
(agents.x-k8s.io and extensions.agents.x-k8s.io v1beta1; the CRDs are in
manifests/crds), creates pods without a node for the kube-scheduler to
place, and stops on SIGINT or SIGTERM. It behaves as agent-sandbox v1.0.13
unless --release v0.5.6 asks for v0.5.6's visible behaviour (the pod-name
annotation written, PodScheduled and Finished removed with the pod, Ready read
from a terminating pod, invalid objects retried). Install the real controller
for anything else. Every flag can also be set by the environment variable in
brackets; flags win.

`)
	d := Defaults()
	settings.Usage(w, d.settings())
}

// namespaces returns the watched namespaces; nil means all.
func (o Options) namespaces() []string { return settings.SplitList(o.Namespaces) }

// controllerOptions hands the controller its Options: no start delays
// (real pods take their own time) and placement left to the scheduler.
func (o Options) controllerOptions(kube kubernetes.Interface, sb *sandboxapi.Client, log *slog.Logger) controller.Options {
	return controller.Options{
		Client: kube, Sandboxes: sb, Namespaces: o.namespaces(),
		ClusterDomain: o.ClusterDomain, Workers: o.Workers, Release: controller.Release(o.Release),
		LeaveScheduling: true, Logger: log,
	}
}

// Validate reports every problem at once and changes nothing.
func (o Options) Validate() error {
	errs := append([]error(nil), o.problems...)
	for _, ns := range o.namespaces() {
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("NAMESPACE entry %q: %s", ns, strings.Join(msgs, "; ")))
		}
	}
	if msgs := validation.IsDNS1123Subdomain(o.ClusterDomain); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("CLUSTER_DOMAIN %q: %s", o.ClusterDomain, strings.Join(msgs, "; ")))
	}
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("WORKERS %d must be at least 1", o.Workers))
	}
	if err := controller.Release(o.Release).Check(); err != nil {
		errs = append(errs, fmt.Errorf("RELEASE: %w", err))
	}
	if _, err := settings.Level(o.LogLevel); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
