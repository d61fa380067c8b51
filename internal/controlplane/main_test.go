package controlplane_test

import (
	"os"
	"testing"

	"github.com/sandgate/sandgate/internal/clustertest"
	"github.com/sandgate/sandgate/internal/controlplane"
)

var cluster *controlplane.ControlPlane

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(m.Run())
	}
	os.Exit(clustertest.Main(m, &cluster))
}
