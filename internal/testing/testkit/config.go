package testkit

import (
	"io"
	"testing"
)

// Loaded is the configuration load makes of args and env (seen through
// Env), with usage output discarded; a load error fails the test.
func Loaded[C any](t testing.TB, load func(args []string, getenv func(string) string, usageOut io.Writer) (C, error), args []string, env map[string]string) C {
	t.Helper()
	c, err := load(args, Env(env), io.Discard)
	if err != nil {
		t.Fatalf("load %q with %v: %v", args, env, err)
	}
	return c
}
