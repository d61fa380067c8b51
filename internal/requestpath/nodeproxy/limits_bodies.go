package nodeproxy

import (
	"fmt"
	"net/netip"
	"sync"
)

// Bounds on bodies bound for the auth API, which anyone may send before
// signing in. They are constants rather than settings: the auth API's own
// body limit (its MAX_BODY_MB default) caps what it would accept anyway,
// and its forms are a few hundred bytes.
const (
	// authAPIMaxBodyBytes is the auth API's default body limit; a larger
	// body would only be refused there (413).
	authAPIMaxBodyBytes = 1 << 20
	// authAPIClientBytes bounds the auth API bodies one client (an IPv4
	// address or an IPv6 /64) has buffered at once.
	authAPIClientBytes = 4 * authAPIMaxBodyBytes
	// authAPIBufferedBytes bounds the auth API bodies all clients have
	// buffered at once.
	authAPIBufferedBytes = 64 * authAPIMaxBodyBytes
)

// bodyBudget accounts the bytes reserved for buffering auth API bodies,
// per client and in total.
type bodyBudget struct {
	perClient, total int64

	mu      sync.Mutex
	clients map[netip.Prefix]int64
	used    int64
}

func newBodyBudget(perClient, total int64) *bodyBudget {
	return &bodyBudget{perClient: perClient, total: total, clients: make(map[netip.Prefix]int64)}
}

// reserve takes n bytes for client, or returns ErrTooManyInFlight when the
// client's or everyone's share is taken.
func (b *bodyBudget) reserve(client netip.Prefix, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.clients[client]+n > b.perClient:
		return fmt.Errorf("%w: client %s has %d body bytes buffered", ErrTooManyInFlight, client, b.clients[client])
	case b.used+n > b.total:
		return fmt.Errorf("%w: %d auth API body bytes buffered", ErrTooManyInFlight, b.used)
	}
	b.clients[client] += n
	b.used += n
	return nil
}

// release gives back what reserve took.
func (b *bodyBudget) release(client netip.Prefix, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.clients[client] -= n; b.clients[client] <= 0 {
		delete(b.clients, client)
	}
}

// buffered returns the bytes reserved in total.
func (b *bodyBudget) buffered() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
