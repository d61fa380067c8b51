package egress

import (
	"os"
	"testing"

	"github.com/sandgate/sandgate/internal/clustertest"
	"github.com/sandgate/sandgate/internal/controlplane"
)

// The real control plane starts on first use, so unit-only runs never
// pay for it.
var shared clustertest.Lazy

func controlPlane(t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	return shared.Get(t)
}

func TestMain(m *testing.M) {
	os.Exit(clustertest.MainLazy(m, &shared))
}
