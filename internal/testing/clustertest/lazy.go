package clustertest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
)

// Lazy is a control plane shared by a package's tests that starts on first
// use, so unit-only runs and fuzzing never pay for it.
type Lazy struct {
	once sync.Once
	cp   *controlplane.ControlPlane
	err  error
}

// Get starts the control plane on the first call and returns it.
func (l *Lazy) Get(t testing.TB) *controlplane.ControlPlane {
	t.Helper()
	l.once.Do(func() { l.cp, l.err = Start(context.Background()) })
	if l.err != nil {
		t.Fatalf("start control plane: %v", l.err)
	}
	return l.cp
}

// MainLazy runs a package's tests, stops the control plane if one started,
// and then fails the run on leaked goroutines beyond LeakOptions and extra.
func MainLazy(m *testing.M, l *Lazy, extra ...goleak.Option) int {
	code := m.Run()
	if l.cp != nil {
		l.cp.Stop()
	}
	if code == 0 {
		if err := goleak.Find(append(LeakOptions(), extra...)...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}

// LeakOptions ignores goroutines that client-go, net/http, klog and fasthttp
// keep process-wide or retire on their own schedule.
func LeakOptions() []goleak.Option {
	return []goleak.Option{
		// Idle keep-alive connections of client-go's cached transports and
		// of test clients, until their idle timeout.
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
		// fasthttp's client and worker-pool cleaners notice idleness only
		// after a second or more; its dialer cache and date updater are
		// process-wide.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*Client).mCleaner"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*TCPDialer).tcpAddrsClean"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
	}
}
