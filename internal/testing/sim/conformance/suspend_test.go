package conformance_test

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
)

// Contract, "Suspend": the owned pod is deleted; PVCs and the Service are
// kept; serviceFQDN stays set; podIPs and nodeName are cleared only once
// no pod exists. Condition Suspended: PodTerminating (False) while the pod
// goes, PodTerminated (True) once it is gone, "on resume it is set back to
// False, not removed". "Resume": a new pod with the same name is created,
// the same PVCs reattach, it gets a new UID. Ready is False/SandboxSuspended
// throughout the suspend (upstream controllers/sandbox_controller.go
// computeReadyCondition).
func TestSuspendThenResume(t *testing.T) {
	forEachRelease(t, func(t *testing.T, r controller.Release) {
		b := startBare(t, r)
		const name = "sleeper"
		b.createSandbox(name, true)
		before := b.startPod(name, "", "10.244.3.1")
		sb := b.waitSandbox(name, "Ready", cond(agents.ConditionReady, "True/DependenciesReady"), podFields("10.244.3.1"))
		fqdn := sb.Status.ServiceFQDN
		kept := b.children(name)

		b.setMode(name, agents.OperatingModeSuspended)
		b.waitSandbox(name, "suspending, pod fields kept",
			cond(agents.ConditionSuspended, "False/PodTerminating"),
			cond(agents.ConditionReady, "False/SandboxSuspended"),
			podFields("10.244.3.1"))
		pod, err := b.pod(name)
		if err != nil || pod.DeletionTimestamp == nil || pod.UID != before.UID {
			t.Fatalf("the controller did not delete the pod: %v %+v", err, pod)
		}

		b.finishDeletion(name)
		b.waitSandbox(name, "suspended, pod fields cleared",
			cond(agents.ConditionSuspended, "True/PodTerminated"),
			cond(agents.ConditionReady, "False/SandboxSuspended"),
			podFields(""),
			func(sb *agents.Sandbox) error {
				if sb.Status.ServiceFQDN != fqdn {
					return fmt.Errorf("serviceFQDN %q, want %q kept", sb.Status.ServiceFQDN, fqdn)
				}
				return nil
			})
		if got := b.children(name); got != kept {
			t.Errorf("volume claim and Service after the suspend: %s, want %s", got, kept)
		}

		b.setMode(name, agents.OperatingModeRunning)
		after := b.startPod(name, string(before.UID), "10.244.3.2")
		if !mountsClaim(after, "home", "home-"+name) {
			t.Errorf("resumed pod volumes %+v", after.Spec.Volumes)
		}
		b.waitSandbox(name, "resumed",
			cond(agents.ConditionSuspended, "False/NotSuspended"),
			cond(agents.ConditionReady, "True/DependenciesReady"),
			podFields("10.244.3.2"))
		if got := b.children(name); got != kept {
			t.Errorf("volume claim and Service after the resume: %s, want %s", got, kept)
		}
	})
}

// children names the UIDs of a Sandbox's volume claim and Service.
func (a *api) children(name string) string {
	a.t.Helper()
	pvc, err := a.kube.CoreV1().PersistentVolumeClaims(a.ns).Get(a.t.Context(), "home-"+name, metav1.GetOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	svc, err := a.kube.CoreV1().Services(a.ns).Get(a.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	return fmt.Sprintf("pvc %s, service %s", pvc.UID, svc.UID)
}
