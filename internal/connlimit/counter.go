package connlimit

import "sync"

// Counter counts what each key holds, up to a maximum; a key that holds
// nothing is forgotten. The zero value is ready to use.
type Counter[K comparable] struct {
	mu sync.Mutex
	n  map[K]int
}

// Take counts one more for key, or reports false when key holds max.
func (c *Counter[K]) Take(key K, max int) bool {
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

// Give gives back one that Take counted.
func (c *Counter[K]) Give(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[key] <= 1 {
		delete(c.n, key)
		return
	}
	c.n[key]--
}

// Count returns what key holds.
func (c *Counter[K]) Count(key K) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}
