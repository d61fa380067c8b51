package cmd_test

import (
	"os/exec"
	"strings"
	"testing"
)

// shipped are the binaries operators run; the stand-ins and the demo are
// not among them.
var shipped = []string{"./authapi", "./nodeproxy", "./sandgate-preflight", "./sandgate-images"}

// TestShippedBinariesLinkNoSimulationOrTestCode: no shipped binary links a
// package of our test harnesses and simulated cluster (internal/testing/...),
// any other package whose path names "test", or the standard library's
// testing packages.
func TestShippedBinariesLinkNoSimulationOrTestCode(t *testing.T) {
	const module = "github.com/sandgate/sandgate/"
	out, err := exec.CommandContext(t.Context(), "go", append([]string{"list", "-deps"}, shipped...)...).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for pkg := range strings.FieldsSeq(string(out)) {
		if pkg == "testing" || pkg == "net/http/httptest" {
			t.Errorf("a shipped binary links %s", pkg)
		}
		own, ok := strings.CutPrefix(pkg, module)
		if !ok {
			continue
		}
		if strings.HasPrefix(own, "internal/testing/") || strings.Contains(own, "test") {
			t.Errorf("a shipped binary links %s", pkg)
		}
	}
}
