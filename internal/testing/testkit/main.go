// Package testkit holds the helpers every package's tests share: the
// per-package TestMain with its leak check, one real control plane per test
// binary started on first use, waits on a condition, and a fake clock.
// Tests only: no shipped binary imports it.
package testkit

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
	"github.com/sandgate/sandgate/internal/testing/clustertest"
)

// shared is the test binary's control plane; it starts on the first
// ControlPlane call, so unit-only runs and fuzzing never pay for it.
var shared clustertest.Lazy

// Main is a package's TestMain: it runs the tests, stops the control plane
// if one started, fails a passing run on goroutines left behind (beyond
// clustertest.LeakOptions and ignore) and exits with the result.
// Use it as `func TestMain(m *testing.M) { testkit.Main(m) }`.
func Main(m *testing.M, ignore ...goleak.Option) {
	os.Exit(clustertest.MainLazy(m, &shared, ignore...))
}

// ControlPlane returns the test binary's real etcd and kube-apiserver,
// starting them on the first call. Packages that use it must run their
// tests through Main, which stops it.
func ControlPlane(t testing.TB) *controlplane.ControlPlane {
	t.Helper()
	return shared.Get(t)
}
