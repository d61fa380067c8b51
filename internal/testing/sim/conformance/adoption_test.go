package conformance_test

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// userMeta is a claim's additionalPodMetadata, in the user label domain.
var userMeta = agents.PodMetadata{
	Labels:      map[string]string{"sandbox.users.io/user": "alice"},
	Annotations: map[string]string{"sandbox.users.io/note": "hi"},
}

// Contract, "Behaviour", adoption: the controller picks a Ready spare,
// annotates the claim with its name (agents.x-k8s.io/sandbox-name), patches
// the Sandbox (drops the pool labels, sets launch-type=warm, moves the
// ownerReference from the pool to the claim, adds claim-uid, merges the
// claim's additionalPodMetadata into the pod); status.sandbox.name is the
// spare's name, not the claim's; the claim's Ready mirrors the Sandbox's.
// The pod carries claim-uid since PR 1422 (v1.0; upstream v0.5.6 filters
// agents.x-k8s.io/ keys out of the pod template:
// controllers/sandbox_controller.go isSystemLabel).
func TestAdoption(t *testing.T) {
	forEachRelease(t, func(t *testing.T, r controller.Release) {
		e, a := simulated(t, r, 2)
		e.WaitPool(2)
		pool, err := a.sb.SandboxWarmPools(a.ns).Get(t.Context(), simtest.PoolName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		spares := a.spares()
		claim := a.createClaim(simtest.PoolName, "adopter", userMeta)
		claim = a.waitClaim(claim.Name, "Ready", agents.ConditionReady, "True/DependenciesReady")

		name := claim.Status.Sandbox.Name
		if !slices.Contains(spares, name) || name == claim.Name {
			t.Fatalf("status.sandbox.name %q, want one of the spares %v", name, spares)
		}
		if got := claim.Annotations[extensions.AnnotationSandboxName]; got != name {
			t.Errorf("claim annotation %s=%q, want %q", extensions.AnnotationSandboxName, got, name)
		}
		sb := a.waitSandbox(name, "adopted", cond(agents.ConditionReady, "True/DependenciesReady"))
		if _, ok := sb.Labels[agents.LabelWarmPoolSandbox]; ok || sb.Labels[agents.LabelLaunchType] != agents.LaunchTypeWarm ||
			sb.Labels[agents.LabelClaimUID] != string(claim.UID) {
			t.Errorf("adopted Sandbox labels %v", sb.Labels)
		}
		if err := controlledBy(sb, "SandboxClaim", claim.UID); err != nil {
			t.Error(err)
		}
		for _, ref := range sb.OwnerReferences {
			if ref.UID == pool.UID {
				t.Errorf("the pool still owns the adopted Sandbox: %+v", ref)
			}
		}
		if !slices.Equal(claim.Status.Sandbox.PodIPs, sb.Status.PodIPs) || len(sb.Status.PodIPs) != 1 {
			t.Errorf("claim podIPs %v, Sandbox podIPs %v", claim.Status.Sandbox.PodIPs, sb.Status.PodIPs)
		}

		testkit.EventuallyNil(t, "the adopted pod's metadata", func() error {
			pod, err := a.pod(name)
			if err != nil {
				return err
			}
			_, pooled := pod.Labels[agents.LabelWarmPoolSandbox]
			uid, hasUID := pod.Labels[agents.LabelClaimUID]
			switch {
			case pooled || pod.Labels["sandbox.users.io/user"] != "alice" || pod.Annotations["sandbox.users.io/note"] != "hi":
				return fmt.Errorf("pod labels %v annotations %v", pod.Labels, pod.Annotations)
			case hasUID != (r == controller.ReleaseV1) || hasUID && uid != string(claim.UID):
				return fmt.Errorf("pod claim-uid %q (present %v)", uid, hasUID)
			}
			return controlledBy(pod, "Sandbox", sb.UID)
		})
	})
}

// spares are the names of the pool's unclaimed Sandboxes.
func (a *api) spares() []string {
	a.t.Helper()
	list, err := a.sb.Sandboxes(a.ns).List(a.t.Context(), metav1.ListOptions{
		LabelSelector: agents.LabelWarmPoolSandbox + "=" + fnv32a(simtest.PoolName),
	})
	if err != nil {
		a.t.Fatal(err)
	}
	var names []string
	for _, sb := range list.Items {
		names = append(names, sb.Name)
	}
	return names
}

// Contract, "Behaviour": "With no spare it creates a Sandbox named after
// the claim (cold start)", launch-type cold, claim-uid, controlled by the
// claim.
func TestColdStart(t *testing.T) {
	forEachRelease(t, func(t *testing.T, r controller.Release) {
		_, a := simulated(t, r, 0)
		claim := a.createClaim(simtest.PoolName, "cold-claim", userMeta)
		claim = a.waitClaim(claim.Name, "Ready", agents.ConditionReady, "True/DependenciesReady")
		if claim.Status.Sandbox.Name != claim.Name || claim.Annotations[extensions.AnnotationSandboxName] != claim.Name {
			t.Errorf("status.sandbox.name %q, annotation %q, want the claim's name", claim.Status.Sandbox.Name, claim.Annotations[extensions.AnnotationSandboxName])
		}
		sb := a.waitSandbox(claim.Name, "Ready", cond(agents.ConditionReady, "True/DependenciesReady"))
		if sb.Labels[agents.LabelLaunchType] != agents.LaunchTypeCold || sb.Labels[agents.LabelClaimUID] != string(claim.UID) {
			t.Errorf("Sandbox labels %v", sb.Labels)
		}
		if err := controlledBy(sb, "SandboxClaim", claim.UID); err != nil {
			t.Error(err)
		}
		pod, err := a.pod(claim.Name)
		if err != nil {
			t.Fatal(err)
		}
		if pod.Labels["sandbox.users.io/user"] != "alice" {
			t.Errorf("pod labels %v lack the claim's", pod.Labels)
		}
	})
}
