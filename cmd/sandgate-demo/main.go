// Command sandgate-demo runs sandgate's local platform for `make demo`: a
// real etcd and kube-apiserver with the agent-sandbox CRDs, a simulated
// cluster of nodes (the stand-in agent-sandbox controller and kubelet from
// internal/testing/sim) holding the SandboxTemplate and SandboxWarmPool of
// manifests/sandbox, and the platform itself as child processes: auth API
// replicas and one node proxy per node. It renders manifests/authapi and
// manifests/daemonset with kubectl kustomize, applies their identities,
// RBAC and ConfigMaps, and runs each process as its workload's
// ServiceAccount with its workload's environment (ConfigMaps and pod spec),
// changed only where a local run must differ; it prints those overrides,
// the entry URLs and a kubeconfig and runs until Ctrl-C, then stops every
// process it started and removes its temporary files.
//
// It is a demo and test harness, not part of the platform: nothing it runs
// is used in production.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
	"github.com/sandgate/sandgate/internal/settings"
	"github.com/sandgate/sandgate/internal/testing/sim/cluster"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/userorigin"
)

func main() {
	if err := run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "sandgate-demo:", err)
		os.Exit(1)
	}
}

// config is everything main reads from flags and the environment.
type config struct {
	namespace    string // empty: the manifests'
	nodes        int
	manifests    string
	crds         string
	authapiDir   string // manifests/authapi
	nodeproxyDir string // manifests/daemonset
	binDir       string // where authapi and nodeproxy are, or are built
	authReplicas int
	httpHost     string
	httpPort     int // the first node's entry port; node i serves on httpPort+i
	routingMode  string
	userDomain   string // parent of the user origins in subdomain routing
	tempParent   string
	delays       controller.Delays
	release      string // the stand-in controller's agent-sandbox release
	idleTimeout  time.Duration
	reportEvery  time.Duration
	logMaxSize   int64
	logLevel     slog.Level
	readyTimeout time.Duration
	assetsDir    string // KUBEBUILDER_ASSETS
	cacheDir     string // from SANDGATE_CACHE
}

func defaults(getenv func(string) string) config {
	return config{
		nodes:        2,
		manifests:    filepath.Join("manifests", "sandbox"),
		crds:         filepath.Join("manifests", "crds"),
		authapiDir:   filepath.Join("manifests", "authapi"),
		nodeproxyDir: filepath.Join("manifests", "daemonset"),
		binDir:       "bin",
		authReplicas: 2,
		httpHost:     "127.0.0.1",
		httpPort:     8080,
		routingMode:  string(userorigin.Path),
		userDomain:   "localhost",
		delays:       controller.Delays{WarmAdoption: time.Second, ColdStart: 3 * time.Second, Resume: 2 * time.Second},
		release:      string(controller.ReleaseV1),
		idleTimeout:  2 * time.Minute,
		reportEvery:  5 * time.Second,
		logMaxSize:   10 << 20,
		logLevel:     slog.LevelWarn,
		readyTimeout: time.Minute,
		assetsDir:    getenv("KUBEBUILDER_ASSETS"),
		cacheDir:     controlplane.DefaultCacheDir(getenv),
	}
}

func (c config) validate() error {
	var errs []error
	if c.nodes < 1 || c.nodes > 20 {
		errs = append(errs, fmt.Errorf("--nodes %d is not in 1..20", c.nodes))
	}
	if c.reportEvery <= 0 || c.idleTimeout <= c.reportEvery {
		errs = append(errs, fmt.Errorf("--idle-timeout %v must be longer than --report-interval %v, which must be positive", c.idleTimeout, c.reportEvery))
	}
	if c.delays.WarmAdoption < 0 || c.delays.ColdStart < 0 || c.delays.Resume < 0 {
		errs = append(errs, errors.New("delays must not be negative"))
	}
	if err := controller.Release(c.release).Check(); err != nil {
		errs = append(errs, fmt.Errorf("--agent-sandbox-release: %w", err))
	}
	if c.logMaxSize < 1024 {
		errs = append(errs, errors.New("--log-max-size must be at least 1024"))
	}
	if c.authReplicas < 1 || c.authReplicas > 10 {
		errs = append(errs, fmt.Errorf("--authapi-replicas %d is not in 1..10", c.authReplicas))
	}
	if c.httpPort < 1 || c.httpPort+c.nodes > 65536 {
		errs = append(errs, fmt.Errorf("--http-port %d leaves no room for %d nodes", c.httpPort, c.nodes))
	}
	if _, err := userorigin.Check("--routing-mode", c.routingMode, "--user-domain", c.userDomain); err != nil {
		errs = append(errs, err)
	}
	if c.httpHost == "" {
		errs = append(errs, errors.New("--http-host is empty"))
	}
	for flagName, dir := range map[string]string{"--manifests": c.manifests, "--crds": c.crds,
		"--authapi-manifests": c.authapiDir, "--nodeproxy-manifests": c.nodeproxyDir} {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			errs = append(errs, fmt.Errorf("%s %q is not a directory (run from the repository root)", flagName, dir))
		}
	}
	return errors.Join(errs...)
}

// local is what the demo's processes run with instead of the manifests'
// settings besides their loopback wiring.
func (c config) local(m rendered) localRun {
	return localRun{namespace: m.movedTo, idleTimeout: c.idleTimeout.String(), reportInterval: c.reportEvery.String(),
		routing: routing{mode: c.routingMode, userDomain: c.userDomain}}
}

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	c := defaults(getenv)
	fs := flag.NewFlagSet("sandgate-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: sandgate-demo [flags]

Runs sandgate's local platform until Ctrl-C: etcd and kube-apiserver (built by
'make controlplane', found through KUBEBUILDER_ASSETS or SANDGATE_CACHE) and a
simulated cluster of nodes whose pods run the agent web-app stand-in on
loopback addresses (127.10x.y.z:3080), with CRI logs in a per-node directory.
It renders manifests/sandbox (a SandboxTemplate and a SandboxWarmPool),
manifests/authapi and manifests/daemonset with 'kubectl kustomize', applies
all but the workloads, Services and policies, waits for the spares, then runs
the auth API replicas and one node proxy per node (from --bin-dir, built there
when missing), each as its Deployment's or DaemonSet's ServiceAccount with its
environment; the few settings a local run must change are printed at start.
Node i's proxy serves browsers on --http-host:(--http-port + i). It prints the
URLs and a kubeconfig, and removes everything on exit. To see idle suspend
and wake quickly: --idle-timeout 30s.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&c.namespace, "namespace", c.namespace, "namespace of the sandboxes and the auth API (default: the manifests', sandgate); the node proxies stay in theirs")
	fs.IntVar(&c.nodes, "nodes", c.nodes, "number of simulated nodes")
	fs.StringVar(&c.manifests, "manifests", c.manifests, "directory of the template, warm pool and config map to apply")
	fs.StringVar(&c.crds, "crds", c.crds, "directory of the agent-sandbox CRDs")
	fs.StringVar(&c.authapiDir, "authapi-manifests", c.authapiDir, "directory of the auth API's RBAC and ConfigMap")
	fs.StringVar(&c.nodeproxyDir, "nodeproxy-manifests", c.nodeproxyDir, "directory of the node proxy's RBAC and ConfigMap")
	fs.StringVar(&c.binDir, "bin-dir", c.binDir, "directory holding (or receiving) the authapi and nodeproxy binaries")
	fs.IntVar(&c.authReplicas, "authapi-replicas", c.authReplicas, "number of auth API processes")
	fs.StringVar(&c.httpHost, "http-host", c.httpHost, "address the node proxies' entry ports listen on")
	fs.IntVar(&c.httpPort, "http-port", c.httpPort, "entry port of the first node; the others follow it")
	fs.StringVar(&c.routingMode, "routing-mode", c.routingMode, "path (agents under /u/<user>/) or subdomain (each agent on http://<user>.<user-domain>:<port>/, the main origin on localhost)")
	fs.StringVar(&c.userDomain, "user-domain", c.userDomain, "parent domain of the user origins in subdomain routing; browsers resolve *.localhost to loopback")
	fs.StringVar(&c.tempParent, "tmp", c.tempParent, "parent of the demo's temporary directory (default: system temp dir)")
	fs.DurationVar(&c.delays.WarmAdoption, "warm-delay", c.delays.WarmAdoption, "simulated time to adopt a warm spare")
	fs.DurationVar(&c.delays.ColdStart, "cold-delay", c.delays.ColdStart, "simulated time to start a new sandbox's pod")
	fs.DurationVar(&c.delays.Resume, "resume-delay", c.delays.Resume, "simulated time to resume a suspended sandbox")
	fs.StringVar(&c.release, "agent-sandbox-release", c.release, fmt.Sprintf("agent-sandbox release the stand-in controller behaves as: %s, or %s", controller.ReleaseV1, controller.ReleaseV05))
	fs.DurationVar(&c.idleTimeout, "idle-timeout", c.idleTimeout, "IDLE_TIMEOUT: how long an agent without activity runs before it is suspended (the manifests say 15m)")
	fs.DurationVar(&c.reportEvery, "report-interval", c.reportEvery, "REPORT_INTERVAL: how often node proxies report activity to the auth API")
	fs.Int64Var(&c.logMaxSize, "log-max-size", c.logMaxSize, "container log size that triggers rotation, in bytes")
	fs.TextVar(&c.logLevel, "log-level", c.logLevel, "level of the JSON logs on stderr (debug, info, warn, error)")
	fs.DurationVar(&c.readyTimeout, "ready-timeout", c.readyTimeout, "how long to wait for the warm pool's spares")
	if err := settings.Parse(fs, args); err != nil {
		return c, err
	}
	return c, c.validate()
}

func run(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.logLevel}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bins, err := controlplane.FindBinaries(cfg.assetsDir, cfg.cacheDir)
	if err != nil {
		return err
	}
	m, err := renderManifests(ctx, bins.Kubectl, cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, ">> rendered %s, %s and %s with kubectl kustomize; sandboxes and the auth API in namespace %s, node proxies in %s\n",
		cfg.manifests, cfg.authapiDir, cfg.nodeproxyDir, m.sandboxNamespace(), m.nodeproxy.namespace)
	authapiBin, nodeproxyBin, err := locateBinaries(ctx, cfg.binDir, stdout)
	if err != nil {
		return err
	}

	tmp, err := os.MkdirTemp(cfg.tempParent, "sandgate-demo-")
	if err != nil {
		return fmt.Errorf("create temp dir: %w", err)
	}
	defer removeAll(tmp, logger)
	fmt.Fprintln(stdout, ">> starting etcd and kube-apiserver")
	cp, err := controlplane.Start(ctx, controlplane.Options{Binaries: bins, ParentDir: tmp, CRDDir: cfg.crds, Logger: logger})
	if err != nil {
		return err
	}
	defer stopAndLog("control plane", cp.Stop, logger)
	restCfg := cp.AdminConfig()

	fmt.Fprintf(stdout, ">> starting the simulated cluster (%d nodes, agent-sandbox %s stand-in)\n", cfg.nodes, cfg.release)
	sim, err := cluster.Start(ctx, cluster.Options{
		Config: restCfg, Namespaces: []string{m.sandboxNamespace()}, Nodes: cfg.nodes,
		LogDir: filepath.Join(tmp, "logs"), DataDir: filepath.Join(tmp, "volumes"),
		Delays: cfg.delays, Release: controller.Release(cfg.release), LogMaxSize: cfg.logMaxSize, Logger: logger,
	})
	if err != nil {
		return err
	}
	defer stopAndLog("simulated cluster", sim.Stop, logger)

	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return fmt.Errorf("build dynamic client: %w", err)
	}
	fmt.Fprintln(stdout, ">> applying the rendered objects but the workloads, Services and policies the demo runs itself")
	if err := apply(ctx, dyn, m.objs); err != nil {
		return err
	}
	kubeconfig := filepath.Join(tmp, "kubeconfig")
	if err := controlplane.WriteKubeconfig(restCfg, kubeconfig); err != nil {
		return err
	}
	if err := waitForPools(ctx, restCfg, m.sandboxNamespace(), cfg.readyTimeout, stdout); err != nil {
		return err
	}
	p, err := startPlatform(ctx, platformConfig{
		cfg: cfg, dir: tmp, cp: cp, authapi: m.authapi, nodeproxy: m.nodeproxy, local: cfg.local(m),
		nodes: sim.Kubelet.NodeNames(), nodeIP: sim.Kubelet.NodeIP, logRoot: sim.Kubelet.LogRoot,
		getenv: getenv, bins: demoBinaries{authapi: authapiBin, nodeproxy: nodeproxyBin},
	}, stdout, logger)
	if err != nil {
		return err
	}
	defer p.stop(logger)
	printBanner(stdout, cfg, m, bins.Kubectl, kubeconfig, sim, p)

	<-ctx.Done()
	stop() // a second Ctrl-C ends the process at once
	fmt.Fprintln(stdout, "\n>> stopping: node proxies, auth API, simulated cluster, kube-apiserver, etcd; removing", tmp)
	return nil
}

func removeAll(dir string, log *slog.Logger) {
	if err := os.RemoveAll(dir); err != nil {
		log.Error("remove temp dir", "dir", dir, "error", err)
	}
}

func stopAndLog(what string, stop func() error, log *slog.Logger) {
	if err := stop(); err != nil {
		log.Error("stop", "what", what, "error", err)
	}
}
