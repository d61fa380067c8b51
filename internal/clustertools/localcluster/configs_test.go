package localcluster

import (
	"regexp"
	"strings"
	"testing"
)

// TestNodeSocketsArePerNode checks that every socket a node's containerd
// listens on lies under a directory bind-mounted per node: two nodes share
// the host's file system, and a shared socket path lets one node's daemon
// remove and take the other's.
func TestNodeSocketsArePerNode(t *testing.T) {
	text := configTemplates["containerd.toml"]
	sockets := regexp.MustCompile(`(?m)^\s*(?:address|socket_path)\s*=\s*["']([^"']+)["']`).FindAllStringSubmatch(text, -1)
	if len(sockets) < 3 {
		t.Fatalf("found %d socket paths in containerd.toml, want gRPC, ttrpc and NRI", len(sockets))
	}
	for _, s := range sockets {
		if !underNodeMount(s[1]) {
			t.Errorf("socket %s is not under a per-node mount", s[1])
		}
	}
}

func underNodeMount(path string) bool {
	for _, m := range nodeMounts {
		if strings.HasPrefix(path, m.target+"/") {
			return true
		}
	}
	return false
}
