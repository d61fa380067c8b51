package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/testing/clustertest"
)

// KustomizeOverlay writes a kustomization into a new directory that lists
// manifests/base and the named manifests/components, plus extra lines, and
// returns the directory.
func KustomizeOverlay(t testing.TB, components []string, extra string) string {
	t.Helper()
	root, err := clustertest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, filepath.Join(root, "manifests"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [%s]\n", filepath.Join(rel, "base"))
	if len(components) > 0 {
		b.WriteString("components:\n")
		for _, c := range components {
			fmt.Fprintf(&b, "  - %s\n", filepath.Join(rel, "components", c))
		}
	}
	b.WriteString(extra)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
