package sweeper

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) {
	testkit.Main(m, goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}
