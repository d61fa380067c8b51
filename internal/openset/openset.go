// Package openset tracks what a server has open (connections, WebSockets,
// streams) so that shutdown can reach each one: http.Server.Shutdown and
// fasthttp forget what they no longer own.
package openset

import (
	"context"
	"sync"
)

// Set holds the open members. Once closed it takes no new ones, and Wait
// returns when every member it took has been removed. The zero Set is
// empty and open.
type Set[T comparable] struct {
	mu      sync.Mutex
	closed  bool
	members map[T]struct{}
	wg      sync.WaitGroup
}

// Add puts v in the set; it reports false, leaving v out, once Close has
// been called. Each v that Add took must be removed once.
func (s *Set[T]) Add(v T) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.members == nil {
		s.members = make(map[T]struct{})
	}
	s.members[v] = struct{}{}
	s.wg.Add(1)
	return true
}

// Remove takes v out of the set.
func (s *Set[T]) Remove(v T) {
	s.mu.Lock()
	delete(s.members, v)
	s.mu.Unlock()
	s.wg.Done()
}

// Len is the number of members.
func (s *Set[T]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.members)
}

// Members returns the members open now, in no order.
func (s *Set[T]) Members() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.snapshot()
}

// Close makes the set refuse new members and returns the members open now.
func (s *Set[T]) Close() []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return s.snapshot()
}

func (s *Set[T]) snapshot() []T {
	out := make([]T, 0, len(s.members))
	for v := range s.members {
		out = append(out, v)
	}
	return out
}

// Wait returns once every member has been removed.
func (s *Set[T]) Wait() { s.wg.Wait() }

// Drain waits until every member has been removed. If ctx ends first, it
// calls end on each member left and waits for those to be removed too.
func (s *Set[T]) Drain(ctx context.Context, end func(T)) {
	done := make(chan struct{})
	go func() { s.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		for _, v := range s.Members() {
			end(v)
		}
		<-done
	}
}
