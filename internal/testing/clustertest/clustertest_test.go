package clustertest_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/sandgate/sandgate/internal/testing/clustertest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestCRDs: AGENT_SANDBOX_CRDS chooses the CRDs every integration test
// applies; unset, the generated ones, except under CI.
func TestCRDs(t *testing.T) {
	root, err := clustertest.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	generated := filepath.Join(root, "manifests", "crds")
	other := t.TempDir()
	tests := []struct {
		name        string
		env         map[string]string
		dir, source string
		err         bool
	}{
		{"unset", nil, generated, "generated", false},
		{"unset under CI", map[string]string{"CI": "true"}, "", "", true},
		{"upstream", map[string]string{"AGENT_SANDBOX_CRDS": other, "CI": "true"}, other, "upstream", false},
		{"generated named", map[string]string{"AGENT_SANDBOX_CRDS": generated}, generated, "generated", false},
		{"missing", map[string]string{"AGENT_SANDBOX_CRDS": filepath.Join(other, "absent")}, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, source, err := clustertest.CRDs(testkit.Env(tt.env))
			if (err != nil) != tt.err || dir != tt.dir || source != tt.source {
				t.Errorf("CRDs = %q, %q, %v; want %q, %q, error %v", dir, source, err, tt.dir, tt.source, tt.err)
			}
			if tt.name == "unset under CI" && !errors.Is(err, clustertest.ErrNoUpstreamCRDs) {
				t.Errorf("err = %v, want ErrNoUpstreamCRDs", err)
			}
		})
	}
}
