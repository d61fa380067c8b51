package conformance_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
)

// Contract, condition PodScheduled: mirrored from the pod since v0.5.6
// (upstream controllers/sandbox_controller.go computePodScheduledCondition:
// status, reason and message copied; an empty reason becomes PodScheduled
// when True, PodSchedulingUnknown otherwise; Unknown/PodSchedulingUnknown
// while the pod has no such condition). With no pod, v0.5.6 removes it
// (reconcileChildResources); from v1.0.13 (PR 2142) it is never removed:
// False with reason PodAbsent.
func TestPodScheduled(t *testing.T) {
	forEachRelease(t, func(t *testing.T, r controller.Release) {
		b := startBare(t, r)
		const name = "placed"
		b.createSandbox(name, false)
		b.waitPod(name, "")
		b.waitSandbox(name, "pod not reported yet", cond(agents.ConditionPodScheduled, "Unknown/PodSchedulingUnknown"))

		const msg = "0/3 nodes are available: 3 Insufficient cpu."
		b.setStatus(name, func(s *corev1.PodStatus) {
			s.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: corev1.PodReasonUnschedulable, Message: msg}}
		})
		b.waitSandbox(name, "unschedulable mirrored", cond(agents.ConditionPodScheduled, "False/Unschedulable"),
			func(sb *agents.Sandbox) error {
				if c := findCond(sb, agents.ConditionPodScheduled); c.Message != msg {
					return fmt.Errorf("PodScheduled message %q, want the pod's %q", c.Message, msg)
				}
				return nil
			})
		b.setStatus(name, func(s *corev1.PodStatus) {
			s.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse}}
		})
		b.waitSandbox(name, "no reason, not scheduled", cond(agents.ConditionPodScheduled, "False/PodSchedulingUnknown"))

		b.bind(name)
		b.setStatus(name, running(true, "10.244.4.1"))
		b.waitSandbox(name, "scheduled, no reason", cond(agents.ConditionPodScheduled, "True/PodScheduled"))

		b.setMode(name, agents.OperatingModeSuspended)
		b.waitSandbox(name, "pod terminating", cond(agents.ConditionSuspended, "False/PodTerminating"),
			cond(agents.ConditionPodScheduled, "True/PodScheduled"))
		b.finishDeletion(name)
		want := "False/PodAbsent"
		if r == controller.ReleaseV05 {
			want = ""
		}
		b.waitSandbox(name, "no pod", cond(agents.ConditionSuspended, "True/PodTerminated"), cond(agents.ConditionPodScheduled, want))
	})
}
