package nodeproxy

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/sandgate/sandgate/internal/clustertest"
	"github.com/sandgate/sandgate/internal/controlplane"
)

// The real control plane of the end-to-end tests starts on first use, so
// unit runs and fuzzing never pay for it.
var (
	cpOnce sync.Once
	cp     *controlplane.ControlPlane
	cpErr  error
)

func controlPlane(t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	cpOnce.Do(func() { cp, cpErr = clustertest.Start(context.Background()) })
	if cpErr != nil {
		t.Fatalf("start control plane: %v", cpErr)
	}
	return cp
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if cp != nil {
		cp.Stop()
	}
	if code == 0 {
		if err := goleak.Find(leakOptions()...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// leakOptions ignores goroutines that libraries keep process-wide or let
// expire on their own schedule.
func leakOptions() []goleak.Option {
	return []goleak.Option{
		// fasthttp's clients keep cleaner goroutines that notice an idle
		// client only after a second or more.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*Client).mCleaner"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"),
		// A stopped server's worker pool cleaner sleeps a second before
		// it notices; the default TCP dialer's cache cleaner is
		// process-wide.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*TCPDialer).tcpAddrsClean"),
		// A process-wide date updater started by the first server.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		// net/http keep-alive connections of test clients, the renewal
		// client and client-go until their idle timeout.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
	}
}
