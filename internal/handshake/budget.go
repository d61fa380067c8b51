package handshake

import (
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// budgetWindow is the window MaxPerUser counts handshakes in.
const budgetWindow = time.Minute

// userWindow counts one user's handshakes since start.
type userWindow struct {
	start time.Time
	n     int
}

// userBudget caps each user's handshakes per budgetWindow: every
// handshake reads up to MaxTotalBytes of logs, and a user controls the
// Host (part of the cache key) of their requests. Safe for concurrent use.
type userBudget struct {
	max int
	mu  sync.Mutex
	lru *lru.Cache[string, userWindow]
}

func newUserBudget(max, size int) (*userBudget, error) {
	c, err := lru.New[string, userWindow](size)
	if err != nil {
		return nil, err
	}
	return &userBudget{max: max, lru: c}, nil
}

// take spends one of user's handshakes at now and reports whether one was
// left.
func (b *userBudget) take(user string, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	w, ok := b.lru.Get(user)
	if !ok || !now.Before(w.start.Add(budgetWindow)) {
		w = userWindow{start: now}
	}
	if w.n >= b.max {
		return false
	}
	w.n++
	b.lru.Add(user, w)
	return true
}

// failure is a handshake's error, served again until until.
type failure struct {
	err   error
	until time.Time
}

// failureCache remembers failed handshakes per cache key for a short
// while, so a pod without a usable token is not searched again on every
// request. Safe for concurrent use.
type failureCache struct {
	ttl time.Duration
	lru *lru.Cache[cacheKey, failure]
}

func newFailureCache(ttl time.Duration, size int) (*failureCache, error) {
	c, err := lru.New[cacheKey, failure](size)
	if err != nil {
		return nil, err
	}
	return &failureCache{ttl: ttl, lru: c}, nil
}

func (c *failureCache) add(k cacheKey, err error, now time.Time) {
	c.lru.Add(k, failure{err: err, until: now.Add(c.ttl)})
}

// get returns k's remembered error, if it is still fresh.
func (c *failureCache) get(k cacheKey, now time.Time) error {
	f, ok := c.lru.Get(k)
	if !ok {
		return nil
	}
	if !now.Before(f.until) {
		c.lru.Remove(k)
		return nil
	}
	return f.err
}

func (c *failureCache) removeIf(match func(cacheKey) bool) {
	for _, k := range c.lru.Keys() {
		if match(k) {
			c.lru.Remove(k)
		}
	}
}
