package conformance_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// Contract, SandboxWarmPool: spec.replicas spares, status.replicas,
// readyReplicas, selector and observedGeneration; "Labels the controller
// sets": agents.x-k8s.io/warm-pool-sandbox on unclaimed pool Sandboxes and
// pods (the pool name's hash, upstream
// extensions/controllers/sandboxwarmpool_controller.go), each controlled
// by the pool; adoption: "the pool starts a replacement".
func TestWarmPool(t *testing.T) {
	forEachRelease(t, func(t *testing.T, r controller.Release) {
		e, a := simulated(t, r, 2)
		e.WaitPool(2)
		a.checkSpares(2)

		claim := a.createClaim(simtest.PoolName, "taker", agents.PodMetadata{})
		adopted := a.waitClaim(claim.Name, "Ready", agents.ConditionReady, "True/DependenciesReady").Status.Sandbox.Name
		e.WaitPool(2)
		if slices.Contains(a.checkSpares(2), adopted) {
			t.Errorf("the adopted Sandbox %s still counts as a spare", adopted)
		}

		body := `{"spec":{"replicas":3}}`
		if _, err := a.sb.SandboxWarmPools(a.ns).Patch(t.Context(), simtest.PoolName, types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		e.WaitPool(3)
		a.checkSpares(3)
	})
}

// checkSpares waits until the pool's status and its spares agree on n
// Ready spares, checks their names, labels and owner, and returns them.
func (a *api) checkSpares(n int) []string {
	a.t.Helper()
	hash := fnv32a(simtest.PoolName)
	var names []string
	testkit.EventuallyNil(a.t, fmt.Sprintf("%d spares", n), func() error {
		pool, err := a.sb.SandboxWarmPools(a.ns).Get(a.t.Context(), simtest.PoolName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		st := pool.Status
		if st.Replicas != int32(n) || st.ReadyReplicas != int32(n) || st.Selector != agents.LabelWarmPoolSandbox+"="+hash ||
			st.ObservedGeneration != pool.Generation {
			return fmt.Errorf("pool status %+v (generation %d)", st, pool.Generation)
		}
		if names = a.spares(); len(names) != n {
			return fmt.Errorf("spares %v", names)
		}
		for _, name := range names {
			sb, err := a.sb.Sandboxes(a.ns).Get(a.t.Context(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			pod, err := a.pod(name)
			if err != nil {
				return err
			}
			switch {
			case !strings.HasPrefix(name, simtest.PoolName+"-"):
				return fmt.Errorf("spare %s is not named after the pool", name)
			case pod.Labels[agents.LabelWarmPoolSandbox] != hash:
				return fmt.Errorf("spare pod labels %v", pod.Labels)
			}
			if err := controlledBy(sb, "SandboxWarmPool", pool.UID); err != nil {
				return err
			}
		}
		return nil
	})
	return names
}

// Contract, "Labels the controller sets": "an adopted Sandbox's controller
// ownerReference moves from the pool to the claim, so deleting the claim
// garbage-collects the Sandbox and its PVCs" (and with them its pod and
// Service, which the Sandbox controls).
func TestClaimDeletionCascades(t *testing.T) {
	forEachRelease(t, func(t *testing.T, r controller.Release) {
		e, a := simulated(t, r, 1)
		e.WaitPool(1)
		claim := a.createClaim(simtest.PoolName, "leaver", agents.PodMetadata{})
		name := a.waitClaim(claim.Name, "Ready", agents.ConditionReady, "True/DependenciesReady").Status.Sandbox.Name
		pvc := "dsh-home-" + name
		if _, err := a.kube.CoreV1().PersistentVolumeClaims(a.ns).Get(t.Context(), pvc, metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}

		if err := a.sb.SandboxClaims(a.ns).Delete(t.Context(), claim.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		testkit.EventuallyNil(t, "everything of "+name+" gone", func() error {
			gets := map[string]func() error{
				"sandbox": func() error { _, err := a.sb.Sandboxes(a.ns).Get(ctx, name, metav1.GetOptions{}); return err },
				"pod":     func() error { _, err := a.pod(name); return err },
				"volume claim": func() error {
					_, err := a.kube.CoreV1().PersistentVolumeClaims(a.ns).Get(ctx, pvc, metav1.GetOptions{})
					return err
				},
				"service": func() error { _, err := a.kube.CoreV1().Services(a.ns).Get(ctx, name, metav1.GetOptions{}); return err },
			}
			for what, get := range gets {
				if err := get(); !apierrors.IsNotFound(err) {
					return fmt.Errorf("%s still there (%v)", what, err)
				}
			}
			return nil
		})
	})
}

// Contract, SandboxClaim status.conditions: claim-side reasons include
// WarmPoolNotFound and EnvVarsInjectionRejected (spec.env "rejected when
// the template's policy is Disallowed, the default"); additionalPodMetadata
// "user labels must use the sandbox.users.io domain by default" (upstream
// extensions/controllers/sandboxclaim_controller.go
// validateAdditionalPodMetadata: InvalidMetadata).
func TestClaimRejections(t *testing.T) {
	forEachRelease(t, func(t *testing.T, r controller.Release) {
		b := startBare(t, r)
		b.createClaim("no-such-pool", "lost", agents.PodMetadata{})
		b.waitClaim("lost", "no pool", agents.ConditionReady, "False/"+extensions.ReasonWarmPoolNotFound)

		b.coldClaim("labelled", agents.PodMetadata{Labels: map[string]string{"team": "a"}})
		b.waitClaim("labelled", "label outside the domain", agents.ConditionReady, "False/InvalidMetadata")

		claim := &extensions.SandboxClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "with-env"},
			Spec:       extensions.SandboxClaimSpec{WarmPoolRef: extensions.WarmPoolRef{Name: "empty"}, Env: []corev1.EnvVar{{Name: "MODE", Value: "x"}}},
		}
		if _, err := b.sb.SandboxClaims(b.ns).Create(t.Context(), claim, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		b.waitClaim("with-env", "env refused", agents.ConditionReady, "False/"+extensions.ReasonEnvVarsInjectionRejected)
		for _, name := range []string{"lost", "labelled", "with-env"} {
			if _, err := b.sb.Sandboxes(b.ns).Get(t.Context(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("a Sandbox for the refused claim %s: %v", name, err)
			}
		}
	})
}
