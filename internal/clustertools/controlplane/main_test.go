package controlplane_test

import (
	"os"
	"testing"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(m.Run())
	}
	testkit.Main(m)
}
