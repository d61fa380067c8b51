package testkit

import "sync"

// Recorder keeps what a fake saw, in order, for the test to read while the
// fake goes on recording from its own goroutines. The zero value is ready
// to use.
type Recorder[T any] struct {
	mu   sync.Mutex
	seen []T
}

// Add records v.
func (r *Recorder[T]) Add(v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, v)
}

// Last returns the latest record, or the zero T before the first.
func (r *Recorder[T]) Last() T {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) == 0 {
		var zero T
		return zero
	}
	return r.seen[len(r.seen)-1]
}
