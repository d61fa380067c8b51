package httpserve

import (
	"testing"

	"github.com/sandgate/sandgate/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }
