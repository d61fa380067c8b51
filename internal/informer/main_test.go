package informer

import (
	"testing"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) {
	installGates()
	testkit.Main(m)
}
