package kubelet

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) {
	testkit.Main(m, goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*ClientConn).readLoop"))
}
