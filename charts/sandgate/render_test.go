package sandgate_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// exposures are the chart's exposure values; every one but nodeport is a
// kustomize Component of the same name under manifests/components.
var exposures = []string{"nodeport", "ingress", "sso", "subdomain", "hostnetwork"}

// combination is one exposure, with or without hardening.
type combination struct {
	exposure  string
	hardening bool
}

func (c combination) String() string {
	if c.hardening {
		return c.exposure + "+hardening"
	}
	return c.exposure
}

// components are the kustomize Components c adds to the base.
func (c combination) components() []string {
	var out []string
	if c.exposure != "nodeport" {
		out = append(out, c.exposure)
	}
	if c.hardening {
		out = append(out, "hardening")
	}
	return out
}

func combinations() []combination {
	var out []combination
	for _, h := range []bool{false, true} {
		for _, e := range exposures {
			out = append(out, combination{e, h})
		}
	}
	return out
}

// kubectlPath is the kubectl built with the control plane.
func kubectlPath(t *testing.T) string {
	t.Helper()
	bins, err := controlplane.FindBinaries(os.Getenv("KUBEBUILDER_ASSETS"), controlplane.DefaultCacheDir(os.Getenv))
	if err != nil || bins.Kubectl == "" {
		t.Fatalf("kubectl not found next to the control-plane binaries (run `make controlplane`): %v", err)
	}
	return bins.Kubectl
}

// helmPath is HELM (`make helm`); the test is skipped without it.
func helmPath(t *testing.T) string { return testkit.MakeBinary(t, "HELM", "helm") }

// run runs a command and returns its standard output.
func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// runStdin runs a command with stdin and returns its combined output.
func runStdin(name string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	return cmd.CombinedOutput()
}

// kustomize renders manifests/base with the named Components through an
// overlay in a temporary directory.
func kustomize(t *testing.T, kubectl string, components []string) []*unstructured.Unstructured {
	t.Helper()
	return decode(t, run(t, kubectl, "kustomize", testkit.KustomizeOverlay(t, components, "")))
}

// helmTemplate renders the chart with --set values.
func helmTemplate(t *testing.T, helm string, set ...string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", "sandgate", "."}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return decode(t, run(t, helm, args...))
}

func (c combination) values() []string {
	return []string{"exposure=" + c.exposure, fmt.Sprintf("hardening.enabled=%v", c.hardening)}
}

func decode(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	objs, err := controlplane.DecodeManifests(data)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// key names an object as the chart's templates do.
func key(o *unstructured.Unstructured) string {
	return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
}
