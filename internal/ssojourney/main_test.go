package ssojourney

import (
	"flag"
	"os"
	"testing"

	"github.com/sandgate/sandgate/internal/clustertest"
	"github.com/sandgate/sandgate/internal/controlplane"
)

// The real control plane starts on first use, so a run that skips (no
// oauth2-proxy) never pays for it.
var shared clustertest.Lazy

func controlPlane(t *testing.T) *controlplane.ControlPlane {
	t.Helper()
	return shared.Get(t)
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(clustertest.MainLazy(m, &shared))
}
