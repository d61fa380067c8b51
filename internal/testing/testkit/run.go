package testkit

import (
	"context"
	"testing"
)

// Run runs run in a goroutine until the test ends: then it cancels run's
// context, waits for run to return and fails the test, naming what ran,
// on its error.
func Run(t testing.TB, what string, run func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: %v", what, err)
		}
	})
}
