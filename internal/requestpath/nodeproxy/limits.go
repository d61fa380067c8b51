package nodeproxy

import (
	"hash/maphash"
	"sync"
)

// inFlightShards spreads users over locks so busy users do not contend.
const inFlightShards = 32

// inFlight counts each user's requests and WebSockets in progress and caps
// them at max; bodies accounts the auth API bodies being buffered, which
// no user is known for yet.
type inFlight struct {
	max    int
	seed   maphash.Seed
	shards [inFlightShards]capped[string]
	bodies *bodyBudget
}

func newInFlight(max int) *inFlight {
	return &inFlight{max: max, seed: maphash.MakeSeed(), bodies: newBodyBudget(authAPIClientBytes, authAPIBufferedBytes)}
}

func (l *inFlight) shard(user string) *capped[string] {
	return &l.shards[maphash.String(l.seed, user)%inFlightShards]
}

// acquire takes a slot for user, or reports false when all are taken.
func (l *inFlight) acquire(user string) bool { return l.shard(user).take(user, l.max) }

// release gives back a slot acquire took.
func (l *inFlight) release(user string) { l.shard(user).give(user) }

// count returns user's slots in use.
func (l *inFlight) count(user string) int { return l.shard(user).count(user) }

// capped counts what each key holds, up to a maximum; a key that holds
// nothing is forgotten. The zero value is ready to use.
type capped[K comparable] struct {
	mu sync.Mutex
	n  map[K]int
}

// take counts one more for key, or reports false when key holds max.
func (c *capped[K]) take(key K, max int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[key] >= max {
		return false
	}
	if c.n == nil {
		c.n = make(map[K]int)
	}
	c.n[key]++
	return true
}

// give gives back one that take counted.
func (c *capped[K]) give(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[key] <= 1 {
		delete(c.n, key)
		return
	}
	c.n[key]--
}

// count returns what key holds.
func (c *capped[K]) count(key K) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}
