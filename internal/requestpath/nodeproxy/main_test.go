package nodeproxy

import (
	"testing"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// The real control plane starts on first use (testkit.ControlPlane), so
// unit-only runs never pay for it.
func TestMain(m *testing.M) { testkit.Main(m) }
