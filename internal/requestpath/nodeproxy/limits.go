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
	shards [inFlightShards]struct {
		mu sync.Mutex
		n  map[string]int
	}
	bodies *bodyBudget
}

func newInFlight(max int) *inFlight {
	l := &inFlight{max: max, seed: maphash.MakeSeed(), bodies: newBodyBudget(authAPIClientBytes, authAPIBufferedBytes)}
	for i := range l.shards {
		l.shards[i].n = make(map[string]int)
	}
	return l
}

// acquire takes a slot for user, or reports false when all are taken.
func (l *inFlight) acquire(user string) bool {
	s := &l.shards[maphash.String(l.seed, user)%inFlightShards]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[user] >= l.max {
		return false
	}
	s.n[user]++
	return true
}

// release gives back a slot acquire took.
func (l *inFlight) release(user string) {
	s := &l.shards[maphash.String(l.seed, user)%inFlightShards]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n[user] <= 1 {
		delete(s.n, user)
		return
	}
	s.n[user]--
}

// count returns user's slots in use.
func (l *inFlight) count(user string) int {
	s := &l.shards[maphash.String(l.seed, user)%inFlightShards]
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[user]
}
