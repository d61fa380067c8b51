package testkit

import (
	"os"
	"testing"
)

// MakeBinary is the path in the environment variable env of a tool that
// `make target` builds and make test passes in; the test is skipped when
// env is unset or names no file.
func MakeBinary(t testing.TB, env, target string) string {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		t.Skipf("%s is not set: run `make %s` and set %s to the binary (make test does both)", env, target, env)
	}
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s=%s is missing (run `make %s`): %v", env, path, target, err)
	}
	return path
}
