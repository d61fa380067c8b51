package sweeper

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/sandgate/sandgate/internal/clustertest"
	"github.com/sandgate/sandgate/internal/controlplane"
)

// The real control plane starts on first use, so unit-only runs
// (-run 'Test[^I]') never pay for it.
var (
	cpOnce sync.Once
	cp     *controlplane.ControlPlane
	cpErr  error
)

func cluster(t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	cpOnce.Do(func() { cp, cpErr = clustertest.Start(context.Background()) })
	if cpErr != nil {
		t.Fatalf("start control plane: %v", cpErr)
	}
	return cp
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cp != nil {
		cp.Stop()
	}
	if code == 0 {
		if err := goleak.Find(
			// client-go keeps idle HTTP connections of its cached
			// transports, and klog a flusher, process-wide.
			goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
			goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
