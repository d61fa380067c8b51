package testkit

import (
	"io"
	"os"
	"os/exec"
	"testing"
)

// SelfCommand returns a command that runs the test binary again with args
// and the test's environment plus role, a KEY=value the child's TestMain or
// test reads to know what to do.
func SelfCommand(role string, args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), role)
	return cmd
}

// StartPiped starts cmd with pipes to its stdin and stdout; when the test
// ends the process is killed, if still running, and reaped.
func StartPiped(t testing.TB, cmd *exec.Cmd) (stdin io.WriteCloser, stdout io.ReadCloser) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err = cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return stdin, stdout
}
