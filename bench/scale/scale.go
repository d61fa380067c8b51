// Package scale measures a node proxy's informer caches at scale: how long
// the Index takes to sync a fed list of N accounts, the process's resident
// memory once synced, and the cost of one resolve (Index.Lookup). Run it in
// a process of its own so that RSS is the node proxy's alone.
package scale

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/sandgate/sandgate/bench/feed"
	"github.com/sandgate/sandgate/bench/node"
	"github.com/sandgate/sandgate/bench/procstat"
	"github.com/sandgate/sandgate/internal/informer"
)

// Nodes is how many nodes the fed cluster has; this proxy's node runs
// 1/Nodes of the sandboxes, so it caches that many pods.
const Nodes = 50

// Result is one scale measurement.
type Result struct {
	Users int `json:"users"`
	// Pods is how many pods run on this node (and are cached).
	Pods int `json:"pods"`
	// Sync is from starting the informers until every one has synced.
	Sync time.Duration `json:"sync_ns"`
	// BaseRSS is the process's RSS with an empty node proxy built;
	// RSS once the caches hold every account and the fed lists are freed.
	BaseRSS int64 `json:"base_rss"`
	RSS     int64 `json:"rss"`
	// HeapPerUser is the live heap the caches take per account.
	HeapPerUser float64 `json:"heap_per_user"`
	// Lookup is the mean time of one Index.Lookup over random users.
	Lookup time.Duration `json:"lookup_ns"`
}

// Run feeds users accounts to a node proxy's Index and measures it.
func Run(ctx context.Context, users int, jwks []byte) (Result, error) {
	r := Result{Users: users}
	name := func(i int) string { return fmt.Sprintf("user%07d", i) }
	nodes := make([]feed.Node, Nodes)
	for i := range nodes {
		nodes[i] = feed.Node{Name: fmt.Sprintf("node-%02d", i), IP: fmt.Sprintf("10.0.%d.1", i)}
	}
	runtime.GC()
	debug.FreeOSMemory()
	var err error
	if r.BaseRSS, err = procstat.RSS(0); err != nil {
		return r, err
	}
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	lists := feed.Build(feed.Options{
		Namespace: node.Namespace, Users: users, User: name, Nodes: nodes,
		Place: func(i int) int { return i % Nodes }, Local: nodes[0].Name, PodIP: "10.0.0.10", PodPort: 3080,
	})
	idx, err := informer.New(lists.Informer(informer.Options{Namespace: node.Namespace, NodeName: nodes[0].Name}))
	if err != nil {
		return r, fmt.Errorf("build index: %w", err)
	}
	if _, err := node.New(node.Options{Name: nodes[0].Name, Index: idx, JWKS: jwks, PeerPort: 8080}); err != nil {
		return r, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- idx.Run(runCtx) }()
	if err := idx.WaitForSync(ctx); err != nil {
		return r, err
	}
	r.Sync = time.Since(start)
	lists.Drop()
	runtime.GC()
	debug.FreeOSMemory()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	r.HeapPerUser = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(users)
	if r.RSS, err = procstat.RSS(0); err != nil {
		return r, err
	}

	const lookups = 1 << 20
	names := make([]string, 4096)
	for i := range names {
		names[i] = name((i * 7919) % users)
	}
	start = time.Now()
	for i := range lookups {
		e, err := idx.Lookup(names[i%len(names)])
		if err != nil || e.Route.State != informer.StateReady {
			return r, fmt.Errorf("lookup %s: %+v %w", names[i%len(names)], e.Route, err)
		}
		if e.Route.Local {
			r.Pods++
		}
	}
	r.Lookup = time.Since(start) / lookups
	r.Pods = (users + Nodes - 1) / Nodes
	stop()
	<-done
	return r, nil
}
