package cluster_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/sandgate/sandgate/internal/clustertest"
	"github.com/sandgate/sandgate/internal/controlplane"
)

var cp *controlplane.ControlPlane

// TestMain shares one API server among the tests and, once they pass,
// checks that every stopped cluster left no goroutine behind.
func TestMain(m *testing.M) {
	code := clustertest.Main(m, &cp)
	if code == 0 {
		if err := goleak.Find(
			// client-go keeps idle connections to the API server.
			goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
			goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
			goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"),
			// The handshake's fasthttp client keeps process-wide cleaners.
			goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*TCPDialer).tcpAddrsClean"),
			goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*Client).mCleaner"),
			goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"),
		); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}
