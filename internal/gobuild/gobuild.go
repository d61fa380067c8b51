// Package gobuild is how sandgate's own code runs the go command to build its
// commands (the demo building what is missing, tests building the binaries
// they run): static and with -trimpath, the flags of the Makefile's GO_BUILD.
// One set of flags for every build is one compile of each package in the
// build cache, shared with the images and with every other clone.
package gobuild

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
)

// Flags are the go build flags every build of a command uses, with
// CGO_ENABLED=0 in its environment.
var Flags = []string{"-trimpath"}

// Command returns the go command that builds pkgs (such as "./cmd/authapi")
// of the module at root (the working directory when empty) into the
// directory dir.
func Command(ctx context.Context, root, dir string, pkgs ...string) *exec.Cmd {
	args := append([]string{"build"}, Flags...)
	args = append(args, "-o", dir+string(filepath.Separator))
	cmd := exec.CommandContext(ctx, "go", append(args, pkgs...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}
