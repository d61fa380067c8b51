package cmd_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestFlowsMeetOnlyInSharedPackages: the request path (internal/requestpath)
// and the account path (internal/accountpath) never import each other; they
// share only the contracts and plumbing at the top of internal/ (account,
// activity, jwt, sandboxapi, ...), so either side can be read alone.
func TestFlowsMeetOnlyInSharedPackages(t *testing.T) {
	const module = "github.com/sandgate/sandgate/internal/"
	for _, tt := range []struct{ from, never string }{
		{"requestpath", "accountpath"},
		{"accountpath", "requestpath"},
	} {
		out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "../internal/"+tt.from+"/...").Output()
		if err != nil {
			t.Fatalf("go list -deps internal/%s: %v", tt.from, err)
		}
		listed := 0
		for pkg := range strings.FieldsSeq(string(out)) {
			if strings.HasPrefix(pkg, module+tt.from+"/") {
				listed++
			}
			if strings.HasPrefix(pkg, module+tt.never+"/") {
				t.Errorf("a package under internal/%s links %s", tt.from, pkg)
			}
		}
		if listed == 0 {
			t.Errorf("go list found no package under internal/%s", tt.from)
		}
	}
}
