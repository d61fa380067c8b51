package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNetworkAndDown builds the bridge, the guard and two nodes' network
// namespaces, checks the paths the cluster needs and the guard's rules,
// then checks that Down leaves nothing behind. It needs root, and skips
// while a cluster runs on this machine.
func TestNetworkAndDown(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	ctx := context.Background()
	if links := ourLinks(ctx); len(links) > 0 {
		t.Skipf("a local cluster runs here (%v)", links)
	}
	p := Paths{Data: filepath.Join(t.TempDir(), "data")}
	if err := saveState(p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Down(ctx, p) })
	nodes := []node{newNode(p, 1), newNode(p, 2)}
	if err := setUpBridge(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if err := setUpNodeNetwork(ctx, n, nodes); err != nil {
			t.Fatal(err)
		}
	}
	if err := CheckGuard(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := run(ctx, "ping", "-c1", "-W2", nodes[1].ip.String()); err != nil {
		t.Errorf("host to node 2: %v", err)
	}
	if _, err := runIn(ctx, nodes[0], "ping", "-c1", "-W2", nodes[1].ip.String()); err != nil {
		t.Errorf("node 1 to node 2: %v", err)
	}
	routes, err := runIn(ctx, nodes[0], "ip", "route")
	if err != nil || !strings.Contains(routes, nodes[1].podNet.String()+" via "+nodes[1].ip.String()) {
		t.Errorf("node 1 has no route to node 2's pods: %v\n%s", err, routes)
	}
	if err := Down(ctx, p); err != nil {
		t.Fatalf("down: %v", err)
	}
	if left := Leftovers(ctx, p); len(left) > 0 {
		t.Fatalf("left after down: %v", left)
	}
}

func TestGuardRulesNameEveryRange(t *testing.T) {
	r := guardRules()
	for _, want := range []string{NodeNet.String(), PodNet.String(), ServiceNet.String(), "drop"} {
		if !strings.Contains(r, want) {
			t.Errorf("guard rules lack %q:\n%s", want, r)
		}
	}
}
