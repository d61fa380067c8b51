// Package scale measures a node proxy's informer caches at scale: how long
// the Index takes to sync a fed list of N accounts, the process's resident
// memory once synced, and the cost of one resolve (Index.Lookup). Run it in
// a process of its own so that RSS is the node proxy's alone.
package scale

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/sandgate/sandgate/bench/feed"
	"github.com/sandgate/sandgate/bench/node"
	"github.com/sandgate/sandgate/bench/procstat"
	"github.com/sandgate/sandgate/internal/informer"
)

// Nodes is how many nodes the scale table's fed cluster has; the proxy's
// node runs 1/Nodes of the sandboxes.
const Nodes = 50

// Options shape one scale measurement.
type Options struct {
	// Users is how many accounts exist; their Sandboxes are spread round
	// robin over Nodes nodes, and the proxy runs on the first.
	Users int    `json:"users"`
	Nodes int    `json:"nodes"`
	JWKS  []byte `json:"jwks"`
}

// Result is one scale measurement.
type Result struct {
	Users int `json:"users"`
	Nodes int `json:"nodes"`
	// Pods counts the users the running Index routes to a pod on this
	// node, read back from its cache.
	Pods int `json:"pods"`
	// Sync is from starting the node proxy until it is ready (informers
	// synced, keys fetched).
	Sync time.Duration `json:"sync_ns"`
	// BaseRSS is the process's RSS with a node proxy running over empty
	// caches; RSS once a second one's caches hold every
	// account and the fed lists are freed.
	BaseRSS int64 `json:"base_rss"`
	RSS     int64 `json:"rss"`
	// HeapPerUser is the live heap the caches take per account.
	HeapPerUser float64 `json:"heap_per_user"`
	// Lookup is the mean time of one Index.Lookup over random users.
	Lookup time.Duration `json:"lookup_ns"`
}

// Run feeds o.Users accounts to a node proxy's Index and measures it.
func Run(ctx context.Context, o Options) (Result, error) {
	r := Result{Users: o.Users, Nodes: o.Nodes}
	nodes := make([]feed.Node, o.Nodes)
	for i := range nodes {
		nodes[i] = feed.Node{Name: fmt.Sprintf("node-%02d", i), IP: fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)}
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	empty, err := start(ctx, o, nodes, 0)
	if err != nil {
		return r, fmt.Errorf("empty proxy: %w", err)
	}
	defer empty.wait()
	if r.BaseRSS, err = settledRSS(); err != nil {
		return r, err
	}
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	full, err := start(ctx, o, nodes, o.Users)
	if err != nil {
		return r, err
	}
	defer full.wait()
	r.Sync = full.sync
	if r.RSS, err = settledRSS(); err != nil {
		return r, err
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	r.HeapPerUser = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(o.Users)
	if r.Lookup, err = lookupTime(full.idx, o.Users); err != nil {
		return r, err
	}
	r.Pods, err = localPods(full.idx, o.Users)
	stop()
	return r, err
}

// proxy is a running node proxy and how long it took to be ready.
type proxy struct {
	*node.Proxy
	idx  *informer.Index
	sync time.Duration
}

// wait waits for the proxy to stop once Run's context ends.
func (p *proxy) wait() { p.Wait() }

// start runs a node proxy over users fed accounts until it is ready and
// frees the fed lists.
func start(ctx context.Context, o Options, nodes []feed.Node, users int) (*proxy, error) {
	lists := feed.Build(feed.Options{
		Namespace: node.Namespace, Users: users, User: userName, Nodes: nodes,
		Place: func(i int) int { return i % len(nodes) }, Local: nodes[0].Name, PodIP: "10.0.0.10", PodPort: 3080,
	})
	began := time.Now()
	px, err := node.Start(ctx, node.Options{Name: nodes[0].Name, IP: "127.0.0.1", Sources: lists, JWKS: o.JWKS, PeerPort: 8080, LogRoot: os.TempDir()})
	if err != nil {
		return nil, fmt.Errorf("start node proxy: %w", err)
	}
	p := &proxy{Proxy: px, idx: px.Index(), sync: time.Since(began)}
	lists.Drop()
	return p, nil
}

// userName names user i.
func userName(i int) string { return fmt.Sprintf("user%07d", i) }

// settledRSS is this process's RSS after a GC that returns freed memory.
func settledRSS() (int64, error) {
	runtime.GC()
	debug.FreeOSMemory()
	return procstat.RSS(0)
}

// lookupTime is the mean time of one Lookup over a spread of users.
func lookupTime(idx *informer.Index, users int) (time.Duration, error) {
	const lookups = 1 << 20
	names := make([]string, min(4096, users))
	for i := range names {
		names[i] = userName((i * 7919) % users)
	}
	began := time.Now()
	for i := range lookups {
		e, err := idx.Lookup(names[i%len(names)])
		if err != nil || e.Route.State != informer.StateReady {
			return 0, fmt.Errorf("lookup %s: %+v %w", names[i%len(names)], e.Route, err)
		}
	}
	return time.Since(began) / lookups, nil
}

// localPods counts the users idx routes to a pod on its own node.
func localPods(idx *informer.Index, users int) (int, error) {
	n := 0
	for i := range users {
		e, err := idx.Lookup(userName(i))
		if err != nil {
			return n, fmt.Errorf("lookup %s: %w", userName(i), err)
		}
		if e.Route.Local {
			n++
		}
	}
	return n, nil
}
