package conformance_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
)

// Contract, condition Suspended: "Always present after the first
// reconcile" (upstream controllers/sandbox_controller.go
// computeSuspendedCondition returns it on every pass, False/NotSuspended
// unless suspended), before the pod has reported anything.
func TestSuspendedPresentFromTheStart(t *testing.T) {
	forEachRelease(t, func(t *testing.T, r controller.Release) {
		b := startBare(t, r)
		b.createSandbox("fresh", false)
		b.waitSandbox("fresh", "first status", cond(agents.ConditionSuspended, "False/NotSuspended"),
			cond(agents.ConditionReady, "False/DependenciesNotReady"))
	})
}

// Contract, condition Ready: "True only while the pod is ready", with the
// reasons DependenciesReady, DependenciesNotReady and PodFailed (upstream
// controllers/sandbox_controller.go computeReadyCondition: Running, Ready
// and with an IP, and the Service present when one is wanted).
func TestReadyFollowsThePod(t *testing.T) {
	forEachRelease(t, func(t *testing.T, r controller.Release) {
		b := startBare(t, r)
		const name = "follows"
		b.createSandbox(name, true)
		b.waitPod(name, "")
		b.waitSandbox(name, "pod Pending", cond(agents.ConditionReady, "False/DependenciesNotReady"))

		b.bind(name)
		b.setStatus(name, running(false, "10.244.2.1"))
		b.waitSandbox(name, "pod Running, not Ready", cond(agents.ConditionReady, "False/DependenciesNotReady"), podFields("10.244.2.1"))
		b.setStatus(name, running(true, "10.244.2.1"))
		b.waitSandbox(name, "pod Ready", cond(agents.ConditionReady, "True/DependenciesReady"))
		b.setStatus(name, running(false, "10.244.2.1"))
		b.waitSandbox(name, "pod no longer Ready", cond(agents.ConditionReady, "False/DependenciesNotReady"))
		b.setStatus(name, func(s *corev1.PodStatus) { s.Phase = corev1.PodFailed })
		b.waitSandbox(name, "pod Failed", cond(agents.ConditionReady, "False/PodFailed"))
	})
}

// Contract, condition Ready, reason PodSucceeded (upstream
// computeReadyCondition: a Succeeded pod).
func TestReadyPodSucceeded(t *testing.T) {
	forEachRelease(t, func(t *testing.T, r controller.Release) {
		b := startBare(t, r)
		b.createSandbox("done", false)
		b.startPod("done", "", "10.244.2.2")
		b.waitSandbox("done", "Ready", cond(agents.ConditionReady, "True/DependenciesReady"))
		b.setStatus("done", func(s *corev1.PodStatus) { s.Phase = corev1.PodSucceeded })
		b.waitSandbox("done", "pod Succeeded", cond(agents.ConditionReady, "False/PodSucceeded"))
	})
}

// Contract, condition Ready: "From v1.0.11 Ready is False while the pod is
// terminating (PR 2021)". v0.5.6 reads the pod's phase and Ready condition
// only (upstream computeReadyCondition), so a Ready pod being deleted
// keeps the Sandbox Ready.
func TestReadyWhilePodTerminates(t *testing.T) {
	forEachRelease(t, func(t *testing.T, r controller.Release) {
		b := startBare(t, r)
		const name = "terminating"
		b.createSandbox(name, false)
		first := b.startPod(name, "", "10.244.2.3")
		b.waitSandbox(name, "Ready", cond(agents.ConditionReady, "True/DependenciesReady"))

		// Someone deletes the bound pod: it terminates until the kubelet
		// (the test) finishes. The kubelet still reports it Ready; a new
		// IP in that report proves the controller saw the terminating pod.
		if err := b.kube.CoreV1().Pods(b.ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		b.setStatus(name, running(true, "10.244.2.4"))
		want := "False/DependenciesNotReady"
		if r == controller.ReleaseV05 {
			want = "True/DependenciesReady"
		}
		sb := b.waitSandbox(name, "terminating pod seen", podFields("10.244.2.4"), cond(agents.ConditionReady, want))
		if c := findCond(sb, agents.ConditionReady); r == controller.ReleaseV1 && c.Message != "Pod is terminating" {
			t.Errorf("Ready message %q, want %q", c.Message, "Pod is terminating")
		}

		// Running still: once the old pod is gone, a new one comes.
		b.finishDeletion(name)
		b.startPod(name, string(first.UID), "10.244.2.5")
		b.waitSandbox(name, "Ready on the new pod", cond(agents.ConditionReady, "True/DependenciesReady"), podFields("10.244.2.5"))
	})
}

func findCond(sb *agents.Sandbox, typ string) metav1.Condition {
	for _, c := range sb.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}
