package informer

import (
	"sync/atomic"
	"testing"

	clientfeatures "k8s.io/client-go/features"
)

// watchListOff turns client-go's WatchListClient gate off while set.
var watchListOff atomic.Bool

// switchableGates defers to client-go's gates except for WatchListClient
// while watchListOff is set. TestMain installs it before any informer runs.
type switchableGates struct{ clientfeatures.Gates }

func (g switchableGates) Enabled(f clientfeatures.Feature) bool {
	if f == clientfeatures.WatchListClient && watchListOff.Load() {
		return false
	}
	return g.Gates.Enabled(f)
}

func installGates() {
	clientfeatures.ReplaceFeatureGates(switchableGates{clientfeatures.FeatureGates()})
}

// withoutWatchList turns off client-go's streaming list for informers built
// during the test: the fake clients never send its closing bookmark. The
// integration tests keep it on, as production does.
func withoutWatchList(t *testing.T) {
	t.Helper()
	watchListOff.Store(true)
	t.Cleanup(func() { watchListOff.Store(false) })
}
