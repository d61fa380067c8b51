package nodeproxy

import (
	"net/netip"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Refusals a client (clientaddr.Key) may cause where each one costs an
// auth API call (entry codes, sessions of unknown keys): a burst of
// refusalBurst, then one more every refusalEvery. A browser retries a few
// times at most; guessing or replaying takes many.
const (
	refusalBurst   = 10
	refusalEvery   = 6 * time.Second
	refusalClients = 16384 // clients remembered; the oldest are forgotten
)

// failLimiter counts refusals per client as a leaky bucket: each one
// fills it by one, it drains by one every interval, and a full bucket
// blocks the client until it drains.
type failLimiter struct {
	burst float64
	every time.Duration
	now   func() time.Time

	mu      sync.Mutex
	clients *lru.Cache[netip.Prefix, failLevel]
}

type failLevel struct {
	level float64
	at    time.Time
}

func newFailLimiter(burst int, every time.Duration, now func() time.Time) *failLimiter {
	return &failLimiter{burst: float64(burst), every: every, now: now, clients: must(lru.New[netip.Prefix, failLevel](refusalClients))}
}

// allowed reports whether client may try again.
func (l *failLimiter) allowed(client netip.Prefix) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.level(client, l.now()) <= l.burst-1
}

// failed counts one refusal of client.
func (l *failLimiter) failed(client netip.Prefix) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.clients.Add(client, failLevel{level: l.level(client, now) + 1, at: now})
}

// level is client's bucket at now; l.mu is held.
func (l *failLimiter) level(client netip.Prefix, now time.Time) float64 {
	f, ok := l.clients.Peek(client)
	if !ok {
		return 0
	}
	return max(0, f.level-float64(now.Sub(f.at))/float64(l.every))
}
