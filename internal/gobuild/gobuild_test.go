package gobuild_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/gobuild"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// TestSameFlagsAsMake checks that the Makefile's GO_BUILD builds with the
// flags Command uses, so make's builds and the tests' share the cache.
func TestSameFlagsAsMake(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^GO_BUILD\s*:=\s*(.*)$`).FindSubmatch(makefile)
	if line == nil {
		t.Fatal("the Makefile has no GO_BUILD line")
	}
	want := strings.Join(append([]string{"CGO_ENABLED=0", "$(GO)", "build"}, gobuild.Flags...), " ")
	if got := strings.TrimSpace(string(line[1])); got != want {
		t.Errorf("Makefile GO_BUILD = %q, want %q", got, want)
	}
}

func TestCommand(t *testing.T) {
	cmd := gobuild.Command(t.Context(), "/src", "/out", "./cmd/a", "./cmd/b")
	if got, want := strings.Join(cmd.Args[1:], " "), "build -trimpath -o /out/ ./cmd/a ./cmd/b"; got != want {
		t.Errorf("args = %q, want %q", got, want)
	}
	if cmd.Dir != "/src" || cmd.Env[len(cmd.Env)-1] != "CGO_ENABLED=0" {
		t.Errorf("dir %q, env ends %q", cmd.Dir, cmd.Env[len(cmd.Env)-1])
	}
}
