package sweeper

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/sandgate/sandgate/internal/clustertest"
	"github.com/sandgate/sandgate/internal/controlplane"
)

// The real control plane starts on first use, so unit-only runs never
// pay for it.
var shared clustertest.Lazy

func cluster(t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	return shared.Get(t)
}

func TestMain(m *testing.M) {
	os.Exit(clustertest.MainLazy(m, &shared, goleak.IgnoreTopFunction("internal/poll.runtime_pollWait")))
}
