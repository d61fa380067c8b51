package browsertest

import (
	"testing"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// The real control plane starts on first use (testkit.ControlPlane), so a
// run that skips (no Chromium) never pays for it.
func TestMain(m *testing.M) { testkit.Main(m) }
