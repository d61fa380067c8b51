package informer

import (
	"testing"

	"github.com/sandgate/sandgate/internal/testkit"
)

func TestMain(m *testing.M) {
	installGates()
	testkit.Main(m)
}
