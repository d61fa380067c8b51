package conformance_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/sim/cluster"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// coldClaim creates an empty warm pool and a claim on it, whose Sandbox
// is therefore named after the claim, and returns the claim.
func (a *api) coldClaim(name string, meta agents.PodMetadata) *extensions.SandboxClaim {
	a.t.Helper()
	if err := cluster.CreatePool(a.t.Context(), a.sb, a.ns, "empty", 0, "gateway.example"); err != nil {
		a.t.Fatal(err)
	}
	return a.createClaim("empty", name, meta)
}

func (a *api) createClaim(pool, name string, meta agents.PodMetadata) *extensions.SandboxClaim {
	a.t.Helper()
	claim, err := a.sb.SandboxClaims(a.ns).Create(a.t.Context(), &extensions.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       extensions.SandboxClaimSpec{WarmPoolRef: extensions.WarmPoolRef{Name: pool}, AdditionalPodMetadata: meta},
	}, metav1.CreateOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	return claim
}

// waitClaim polls the claim until each condition typ reads want
// ("Status/Reason", "" for absent), pairwise in typeWants, and returns it.
func (a *api) waitClaim(name, what string, typeWants ...string) *extensions.SandboxClaim {
	a.t.Helper()
	var c *extensions.SandboxClaim
	testkit.EventuallyNil(a.t, "claim "+name+": "+what, func() error {
		var err error
		if c, err = a.sb.SandboxClaims(a.ns).Get(a.t.Context(), name, metav1.GetOptions{}); err != nil {
			return err
		}
		for i := 0; i+1 < len(typeWants); i += 2 {
			if got := condOf(c.Status.Conditions, typeWants[i]); got != typeWants[i+1] {
				return fmt.Errorf("%s is %q, want %q", typeWants[i], got, typeWants[i+1])
			}
		}
		return nil
	})
	return c
}

// Contract, condition Finished (Sandbox and SandboxClaim): v0.5.x has it
// while a finished pod exists and removes it when no pod exists; v1.0.13
// (PR 2142) has it absent until a pod first reaches Succeeded or Failed,
// then never removes it: True survives a suspend, False with reason
// NotFinished once a later pod has not finished. Upstream
// controllers/sandbox_controller.go computeFinishedCondition, and
// extensions/controllers/sandboxclaim_controller.go syncFinishedCondition
// for the claim's copy.
func TestFinished(t *testing.T) {
	forEachRelease(t, func(t *testing.T, r controller.Release) {
		b := startBare(t, r)
		const name = "finisher"
		b.coldClaim(name, agents.PodMetadata{})
		first := b.startPod(name, "", "10.244.5.1")
		b.waitSandbox(name, "Ready, never finished", cond(agents.ConditionReady, "True/DependenciesReady"), cond(agents.ConditionFinished, ""))
		b.waitClaim(name, "Ready, never finished", agents.ConditionReady, "True/DependenciesReady", agents.ConditionFinished, "")

		b.setStatus(name, func(s *corev1.PodStatus) { s.Phase = corev1.PodFailed })
		b.waitSandbox(name, "pod failed", cond(agents.ConditionFinished, "True/PodFailed"), cond(agents.ConditionReady, "False/PodFailed"))
		b.waitClaim(name, "pod failed", agents.ConditionFinished, "True/PodFailed")

		persisted := "True/PodFailed"
		if r == controller.ReleaseV05 {
			persisted = ""
		}
		b.setMode(name, agents.OperatingModeSuspended)
		b.awaitDeletion(name)
		b.waitSandbox(name, "suspended", cond(agents.ConditionSuspended, "True/PodTerminated"), cond(agents.ConditionFinished, persisted))
		b.waitClaim(name, "suspended", agents.ConditionFinished, persisted)

		later := "False/NotFinished"
		if r == controller.ReleaseV05 {
			later = ""
		}
		b.setMode(name, agents.OperatingModeRunning)
		b.startPod(name, string(first.UID), "10.244.5.2")
		b.waitSandbox(name, "a later pod runs", cond(agents.ConditionReady, "True/DependenciesReady"), cond(agents.ConditionFinished, later))
		b.waitClaim(name, "a later pod runs", agents.ConditionFinished, later)
	})
}

// Contract, "Failed pods": no released version recreates a Failed pod by
// itself; a platform that deletes the failed pod of a running Sandbox gets
// a new one from the controller.
func TestFailedPodStaysUntilDeleted(t *testing.T) {
	forEachRelease(t, func(t *testing.T, r controller.Release) {
		b := startBare(t, r)
		const name = "crashed"
		b.createSandbox(name, false)
		first := b.startPod(name, "", "10.244.5.3")
		b.setStatus(name, func(s *corev1.PodStatus) { s.Phase = corev1.PodFailed })
		// The pass that wrote PodFailed saw the Failed pod and left it.
		b.waitSandbox(name, "pod failed", cond(agents.ConditionReady, "False/PodFailed"))
		if p, err := b.pod(name); err != nil || p.UID != first.UID || p.DeletionTimestamp != nil {
			t.Fatalf("the Failed pod was not left alone: %v %+v", err, p)
		}

		b.finishDeletion(name) // the platform's recovery
		b.startPod(name, string(first.UID), "10.244.5.4")
		b.waitSandbox(name, "Ready on a new pod", cond(agents.ConditionReady, "True/DependenciesReady"))
	})
}
