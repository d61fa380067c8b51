// Package pause waits out a delay between retries unless the context ends
// first.
package pause

import (
	"context"
	"time"
)

// For waits d and reports whether ctx is still live.
func For(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
