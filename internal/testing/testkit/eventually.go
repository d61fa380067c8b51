package testkit

import (
	"context"
	"testing"
	"time"
)

// Timeout bounds Eventually. It is generous on purpose: it only decides how
// long a failing test takes to say so, never whether a busy machine passes.
const Timeout = time.Minute

// Eventually polls cond until it holds and fails the test, naming what it
// waited for, if it has not within Timeout.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	Within(t, Timeout, what, cond)
}

// Within is Eventually with a bound of d, for a wait known to outlast
// Timeout (a cold start of outside binaries).
func Within(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	polls, ok := poll(t.Context(), d, cond)
	if !ok {
		t.Fatalf("%s: not true after %v (%d checks)", what, time.Since(start).Round(time.Millisecond), polls)
	}
}

// EventuallyNil polls check until it returns nil and fails the test,
// naming what it waited for and the last error, if it has not within
// Timeout.
func EventuallyNil(t testing.TB, what string, check func() error) {
	t.Helper()
	WithinNil(t, Timeout, what, check)
}

// WithinNil is EventuallyNil with a bound of d.
func WithinNil(t testing.TB, d time.Duration, what string, check func() error) {
	t.Helper()
	var last error
	start := time.Now()
	polls, ok := poll(t.Context(), d, func() bool {
		last = check()
		return last == nil
	})
	if !ok {
		t.Fatalf("%s: not done after %v (%d checks), last: %v", what, time.Since(start).Round(time.Millisecond), polls, last)
	}
}

// Poll reports whether cond holds within d, checked at once and then at
// growing intervals, for a caller that decides itself what a miss means.
// It gives up early when ctx ends.
func Poll(ctx context.Context, d time.Duration, cond func() bool) bool {
	_, ok := poll(ctx, d, cond)
	return ok
}

func poll(ctx context.Context, d time.Duration, cond func() bool) (int, bool) {
	deadline := time.Now().Add(d)
	interval := time.Millisecond
	for polls := 1; ; polls++ {
		if cond() {
			return polls, true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return polls, false
		}
		timer := time.NewTimer(min(interval, left))
		select {
		case <-ctx.Done():
			timer.Stop()
			return polls, false
		case <-timer.C:
		}
		interval = min(2*interval, 100*time.Millisecond)
	}
}

// Receive returns the next value from ch and fails the test, naming what it
// waited for, if none comes within Timeout.
func Receive[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("%s: nothing received within %v", what, Timeout)
	case <-t.Context().Done():
		t.Fatalf("%s: test ended while waiting", what)
	}
	var zero T
	return zero
}
