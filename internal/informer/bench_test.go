package informer

import (
	"fmt"
	"runtime"
	"testing"
)

// BenchmarkLookup100k fills the caches with 100k users (claim and Sandbox
// entries as the transforms build them) and reports the heap they take
// and the cost of one Lookup.
func BenchmarkLookup100k(b *testing.B) {
	const users = 100_000
	x, err := New(newFakeAPI(b).options())
	if err != nil {
		b.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range users {
		user := fmt.Sprintf("user%06d", i)
		c := newClaim(user, "pool-"+user)
		s := newSandbox("pool-"+user, "node-b", "", true, false)
		x.claims.GetStore().Add(x.transformClaim(c))
		x.sandboxes.GetStore().Add(x.transformSandbox(s))
	}
	x.nodes.GetStore().Add(x.transformNode(newNode("node-b", "192.0.2.2")))
	runtime.GC()
	runtime.ReadMemStats(&after)
	names := make([]string, 1024)
	for i := range names {
		names[i] = fmt.Sprintf("user%06d", i*97)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		e, err := x.Lookup(names[i%len(names)])
		if err != nil || e.Route.State != StateReady {
			b.Fatalf("Lookup: %+v %v", e.Route, err)
		}
	}
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/users, "heap-B/user")
}
