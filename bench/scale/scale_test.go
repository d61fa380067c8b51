package scale

import (
	"testing"

	"github.com/sandgate/sandgate/bench/node"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestRunCountsCachedPods checks that the pods figure is what the running
// Index holds for this node: 100 users round robin over 4 nodes.
func TestRunCountsCachedPods(t *testing.T) {
	keys, err := node.NewKeys()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(t.Context(), Options{Users: 100, Nodes: 4, JWKS: keys.JWKS})
	if err != nil {
		t.Fatal(err)
	}
	if r.Pods != 25 {
		t.Errorf("pods = %d, want 25", r.Pods)
	}
	if r.BaseRSS <= 0 || r.RSS <= 0 || r.Sync <= 0 || r.Lookup <= 0 {
		t.Errorf("a figure was not measured: %+v", r)
	}
}
