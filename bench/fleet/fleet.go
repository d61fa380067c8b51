// Package fleet measures what many node proxies cost one API server: N
// node proxies' informer caches (internal/informer, each with clients and
// watches of its own, as every node's proxy has them) over a real
// kube-apiserver and etcd holding the accounts, with N growing. For each
// size it measures the API server's watches, the watch events it sends
// per claim change, how long a change takes to reach every node proxy (the
// path a logout takes: the claim's session epoch raised), the API server's
// CPU per change and its RSS, and how long the node proxies take to be
// ready. Run it in a process of its own: the node proxies share its heap.
package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sandgate/sandgate/bench/load"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
)

// Options shape one fleet measurement.
type Options struct {
	// Sizes are the node counts, measured in turn on one API server.
	Sizes []int
	// Users is how many accounts (claims and Sandboxes) the API server
	// holds throughout.
	Users int
	// Changes is how many changes of each kind each size measures, one
	// at a time: logouts with no other change, then logouts, suspends
	// and wakes under Churn.
	Changes int
	Churn   Churn
	// ChurnFor is the shortest churn phase: long enough for the API
	// server's CPU over it to mean something at low rates.
	ChurnFor time.Duration
	Logger   *slog.Logger
}

// Row is one size's figures.
type Row struct {
	Nodes int `json:"nodes"`
	// Watches is how many more WATCH requests the API server holds open
	// with every node proxy synced than before they started.
	Watches float64 `json:"watches"`
	// Ready is from starting the node proxies until the last one synced;
	// Join is one more node proxy's, started once the others run.
	Ready time.Duration `json:"ready_ns"`
	Join  time.Duration `json:"join_ns"`
	// EventsPerChange is the watch events the API server sent for
	// SandboxClaims per claim change.
	EventsPerChange float64 `json:"events_per_change"`
	// Reach is, per logout, from sending it until the last node proxy's
	// cache holds it, summarised over the changes.
	Reach load.Latency `json:"reach"`
	// ChurnedLogout, Suspend and Wake are reaches under the churn: a
	// logout's; a suspend's until the last cache routes the sandbox as
	// Suspended (requests held for a wake); a wake's until none does.
	ChurnedLogout, Suspend, Wake load.Latency
	// ChurnRate is the churn's achieved changes per second, the measured
	// ones included; ChurnCores the API server's CPU over that phase, in
	// cores.
	ChurnRate, ChurnCores float64
	// Leader is the leader's time to decode and merge the node proxies'
	// reports of one report interval (leaderCost).
	Leader time.Duration `json:"leader_ns"`
	// APICPUPerChange is the API server's CPU time over the changes,
	// divided by their count; APIRSS its RSS after them.
	APICPUPerChange time.Duration `json:"api_cpu_per_change_ns"`
	APIRSS          float64       `json:"api_rss"`
	// HeapPerNode is this process's live heap with the node proxies
	// synced, less the heap before, per node proxy.
	HeapPerNode float64 `json:"heap_per_node"`
}

// namespace holds the measured accounts.
const namespace = "fleet"

// Run measures every size of o on the API server cfg reaches.
func Run(ctx context.Context, cfg *rest.Config, o Options) ([]Row, error) {
	kube, sb, err := clients(cfg)
	if err != nil {
		return nil, err
	}
	maxNodes := slices.Max(o.Sizes)
	if err := populate(ctx, kube, sb, o.Users, maxNodes); err != nil {
		return nil, err
	}
	api := apiServer{rest: kube.CoreV1().RESTClient()}
	churn := newChurner(sb, o.Changes, o.Users)
	var rows []Row
	for _, n := range o.Sizes {
		o.Logger.Info("fleet size", "nodes", n, "users", o.Users)
		leader, err := leaderCost(n, o.Users)
		if err != nil {
			return rows, fmt.Errorf("%d nodes' reports: %w", n, err)
		}
		r, err := measure(ctx, cfg, api, sb, churn, n, o)
		if err != nil {
			return rows, fmt.Errorf("%d nodes: %w", n, err)
		}
		r.Leader = leader
		rows = append(rows, r)
	}
	return rows, nil
}

// measure starts n node proxies' caches, changes claims one at a time
// and stops the caches again.
func measure(ctx context.Context, cfg *rest.Config, api apiServer, sb *sandboxapi.Client, churn *churner, n int, o Options) (Row, error) {
	r := Row{Nodes: n}
	base, err := api.read(ctx)
	if err != nil {
		return r, err
	}
	heapBefore := liveHeap()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	start := time.Now()
	idx := make([]*informer.Index, n)
	for i := range n {
		x, err := newIndex(cfg, nodeName(i))
		if err != nil {
			return r, err
		}
		idx[i] = x
		wg.Go(func() { x.Run(ctx) })
	}
	for _, x := range idx {
		if err := x.WaitForSync(ctx); err != nil {
			return r, fmt.Errorf("sync: %w", err)
		}
	}
	r.Ready = time.Since(start)
	r.HeapPerNode = (liveHeap() - heapBefore) / float64(n)
	before, err := api.read(ctx)
	if err != nil {
		return r, err
	}
	r.Watches = before.watches - base.watches
	reach := make([]time.Duration, 0, o.Changes)
	for c := range o.Changes {
		d, err := logoutReach(ctx, sb, idx, userName(c))
		if err != nil {
			return r, err
		}
		reach = append(reach, d)
	}
	after, err := api.read(ctx)
	if err != nil {
		return r, err
	}
	r.Reach = load.Summarise(reach)
	r.EventsPerChange = (after.claimEvents - before.claimEvents) / float64(o.Changes)
	r.APICPUPerChange = time.Duration((after.cpuSeconds - before.cpuSeconds) / float64(o.Changes) * float64(time.Second))
	r.APIRSS = after.rss
	if err := churned(ctx, api, sb, churn, idx, o, &r); err != nil {
		return r, err
	}
	joined := time.Now()
	late, err := newIndex(cfg, nodeName(n))
	if err != nil {
		return r, err
	}
	wg.Go(func() { late.Run(ctx) })
	if err := late.WaitForSync(ctx); err != nil {
		return r, fmt.Errorf("sync: %w", err)
	}
	r.Join = time.Since(joined)
	return r, nil
}

// churned measures the reaches of logouts, suspends and wakes with o.Churn
// running, and the API server's CPU over that phase.
func churned(ctx context.Context, api apiServer, sb *sandboxapi.Client, churn *churner, idx []*informer.Index, o Options, r *Row) error {
	before, err := api.read(ctx)
	if err != nil {
		return err
	}
	start := time.Now()
	cctx, stop := context.WithCancel(ctx)
	var made int64
	var churnErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		made, churnErr = churn.run(cctx, o.Churn)
	}()
	defer func() { stop(); <-done }()
	var logouts, suspends, wakes []time.Duration
	for c := range o.Changes {
		d, err := logoutReach(ctx, sb, idx, userName(c))
		if err != nil {
			return err
		}
		logouts = append(logouts, d)
		if d, err = modeReach(ctx, sb, idx, c, agents.OperatingModeSuspended); err != nil {
			return err
		}
		suspends = append(suspends, d)
		if d, err = modeReach(ctx, sb, idx, c, agents.OperatingModeRunning); err != nil {
			return err
		}
		wakes = append(wakes, d)
	}
	select {
	case <-time.After(o.ChurnFor - time.Since(start)):
	case <-ctx.Done():
		return ctx.Err()
	}
	stop()
	<-done
	if churnErr != nil {
		return churnErr
	}
	took := time.Since(start)
	after, err := api.read(ctx)
	if err != nil {
		return err
	}
	r.ChurnedLogout, r.Suspend, r.Wake = load.Summarise(logouts), load.Summarise(suspends), load.Summarise(wakes)
	r.ChurnRate = (float64(made) + 3*float64(o.Changes)) / took.Seconds()
	r.ChurnCores = (after.cpuSeconds - before.cpuSeconds) / took.Seconds()
	return nil
}

// clients are a core and a sandbox client of their own for cfg.
func clients(cfg *rest.Config) (*kubernetes.Clientset, *sandboxapi.Client, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("build core client: %w", err)
	}
	sb, err := sandboxapi.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("build sandbox client: %w", err)
	}
	return kube, sb, nil
}

// newIndex is one node proxy's caches, on clients of its own.
func newIndex(cfg *rest.Config, node string) (*informer.Index, error) {
	kube, sb, err := clients(cfg)
	if err != nil {
		return nil, err
	}
	return informer.New(informer.Options{
		Namespace: namespace, NodeName: node,
		Claims: sb.SandboxClaims(namespace), Sandboxes: sb.Sandboxes(namespace),
		Pods: kube.CoreV1().Pods(namespace), Nodes: kube.CoreV1().Nodes(),
		Logger: slog.New(slog.DiscardHandler),
	})
}

// liveHeap is the live heap after a collection, bytes.
func liveHeap() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc)
}
