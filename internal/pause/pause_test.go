package pause

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if !For(t.Context(), time.Minute) {
			t.Error("live context: For reported it ended")
		}
		if waited := time.Since(start); waited != time.Minute {
			t.Errorf("waited %v, want 1m", waited)
		}
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		start = time.Now()
		if For(ctx, time.Minute) {
			t.Error("cancelled context: For reported it live")
		}
		if waited := time.Since(start); waited != time.Second {
			t.Errorf("waited %v after a cancel at 1s", waited)
		}
	})
}
