package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
)

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	return meta.FindStatusCondition(conds, typ)
}

// setCondition sets a condition; its transition time changes only with
// its status.
func setCondition(conds *[]metav1.Condition, gen int64, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen,
	})
}

// verdict is one computed condition: its status, reason and message.
type verdict struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

func isFalse(reason, message string) verdict { return verdict{metav1.ConditionFalse, reason, message} }

// sandboxStatus fills sb.Status from what the reconcile saw, as upstream
// controllers/sandbox_controller.go reconcileChildResources and
// computeConditions do: podIPs and nodeName follow the one owned pod and
// are cleared once there is none (or several); Suspended and Ready are
// always present; Finished and PodScheduled differ by release.
func (c *Controller) sandboxStatus(sb *agents.Sandbox, v *sandboxView) {
	st := &sb.Status
	st.Selector = Selector(sb.Name)
	st.Service, st.ServiceFQDN = "", ""
	if v.hasService {
		st.Service = sb.Name
		st.ServiceFQDN = fmt.Sprintf("%s.%s.svc.%s", sb.Name, sb.Namespace, c.opts.ClusterDomain)
	}
	st.NodeName, st.PodIPs = "", nil
	if pod := v.pod(); pod != nil {
		st.NodeName = pod.Spec.NodeName
		for _, ip := range pod.Status.PodIPs {
			st.PodIPs = append(st.PodIPs, ip.IP)
		}
	}

	conds, gen := &st.Conditions, sb.Generation
	set := func(typ string, v verdict) { setCondition(conds, gen, typ, v.status, v.reason, v.message) }
	set(agents.ConditionSuspended, suspendedVerdict(sb, v))
	switch f, keep := c.finishedVerdict(*conds, v); {
	case f != nil:
		set(agents.ConditionFinished, *f)
	case !keep:
		meta.RemoveStatusCondition(conds, agents.ConditionFinished)
	}
	if p := c.podScheduledVerdict(v); p != nil {
		set(agents.ConditionPodScheduled, *p)
	} else {
		meta.RemoveStatusCondition(conds, agents.ConditionPodScheduled)
	}
	set(agents.ConditionReady, c.readyVerdict(sb, v))
}

// suspendedVerdict is the Suspended condition, present from the first
// reconcile on (upstream computeSuspendedCondition): False/NotSuspended
// unless suspended, then False/PodTerminating while the pod goes and
// True/PodTerminated once it is gone. The stand-in owns every pod it
// sees by UID, so PodNotOwned never arises.
func suspendedVerdict(sb *agents.Sandbox, v *sandboxView) verdict {
	switch {
	case operatingMode(sb) != agents.OperatingModeSuspended:
		return isFalse(agents.ReasonNotSuspended, "Sandbox is not suspended")
	case len(v.pods) > 1:
		return verdict{metav1.ConditionUnknown, agents.ReasonPodStateUnknown, "Pod state is unknown. Sandbox suspension cannot be confirmed"}
	case len(v.pods) == 1:
		return isFalse(agents.ReasonPodTerminating, "Pod is terminating. Sandbox is suspending")
	}
	return verdict{metav1.ConditionTrue, agents.ReasonPodTerminated, "Pod has been terminated. Sandbox is suspended"}
}

// finishedVerdict is the Finished condition, or nil with keep when it
// stays as it is, or nil without keep when it goes. Upstream
// computeFinishedCondition (v0.5.6): True/PodSucceeded or True/PodFailed
// while the one owned pod has finished, removed otherwise. v1.0.13 (PR
// 2142): absent until a pod first finishes, then never removed: True
// survives the pod's deletion (a suspend), False/NotFinished once a later
// pod runs.
func (c *Controller) finishedVerdict(conds []metav1.Condition, v *sandboxView) (*verdict, bool) {
	pod := v.pod()
	if pod != nil {
		switch pod.Status.Phase {
		case corev1.PodSucceeded:
			return &verdict{metav1.ConditionTrue, agents.ReasonPodSucceeded, "Pod completed successfully"}, false
		case corev1.PodFailed:
			return &verdict{metav1.ConditionTrue, agents.ReasonPodFailed, "Pod failed"}, false
		}
	}
	switch {
	case c.opts.Release == ReleaseV05:
		return nil, false
	case findCondition(conds, agents.ConditionFinished) == nil:
		return nil, false
	case pod != nil:
		return &verdict{metav1.ConditionFalse, agents.ReasonNotFinished, "Pod has not finished"}, false
	}
	return nil, true // no pod, or several: the last word stands
}

// podScheduledVerdict is the PodScheduled condition, or nil when it goes:
// the owned pod's own condition mirrored (upstream
// computePodScheduledCondition), Unknown while the pod has none or the
// pods are ambiguous; with no pod v0.5.6 removes it and v1.0.13 (PR 2142)
// says False/PodAbsent. Upstream v1.0.13 also says False/SandboxExpired
// after spec.shutdownTime; the stand-in does not model expiry.
func (c *Controller) podScheduledVerdict(v *sandboxView) *verdict {
	pod := v.pod()
	switch {
	case len(v.pods) > 1:
		return &verdict{metav1.ConditionUnknown, agents.ReasonPodSchedulingUnknown, "Pod state is unknown. Pod scheduling cannot be determined"}
	case pod == nil && c.opts.Release == ReleaseV1:
		return &verdict{metav1.ConditionFalse, agents.ReasonPodAbsent, "No Pod exists"}
	case pod == nil:
		return nil
	}
	for _, pc := range pod.Status.Conditions {
		if pc.Type != corev1.PodScheduled {
			continue
		}
		out := verdict{metav1.ConditionStatus(pc.Status), pc.Reason, pc.Message}
		switch {
		case out.reason != "":
		case out.status == metav1.ConditionTrue:
			out.reason = agents.ReasonPodScheduled
		default:
			out.reason = agents.ReasonPodSchedulingUnknown
		}
		return &out
	}
	return &verdict{metav1.ConditionUnknown, agents.ReasonPodSchedulingUnknown, "Pod has not reported a PodScheduled condition yet"}
}

// readyVerdict is the Ready condition (upstream computeReadyCondition):
// errors first, then the suspend, the pod's end, and the pod's readiness
// with the Service's presence when one is wanted. v1.0.13 (PR 2021, from
// v1.0.11) says False/DependenciesNotReady while the pod terminates;
// v0.5.6 ignores deletionTimestamp.
func (c *Controller) readyVerdict(sb *agents.Sandbox, v *sandboxView) verdict {
	pod := v.pod()
	switch {
	case len(v.pods) > 1:
		return isFalse(agents.ReasonMultiplePods, fmt.Sprintf("multiple Pods (%d) are controlled by this Sandbox; refusing to choose or create a Pod", len(v.pods)))
	case v.invalid != "":
		return isFalse(agents.ReasonInvalidConfiguration, v.invalid)
	case v.failure != nil:
		return isFalse(agents.ReasonReconcilerError, "Error seen: "+v.failure.Error())
	case operatingMode(sb) == agents.OperatingModeSuspended && pod != nil:
		return isFalse(agents.ReasonSandboxSuspended, "Sandbox is suspending")
	case operatingMode(sb) == agents.OperatingModeSuspended:
		return isFalse(agents.ReasonSandboxSuspended, "Sandbox is suspended")
	case pod == nil && v.noNode:
		return isFalse(agents.ReasonDependenciesNotReady, "No node to run the Pod on")
	case pod == nil:
		return isFalse(agents.ReasonDependenciesNotReady, "Pod does not exist")
	case pod.DeletionTimestamp != nil && c.opts.Release == ReleaseV1:
		return isFalse(agents.ReasonDependenciesNotReady, "Pod is terminating")
	case pod.Status.Phase == corev1.PodSucceeded:
		return isFalse(agents.ReasonPodSucceeded, "Pod completed successfully")
	case pod.Status.Phase == corev1.PodFailed:
		return isFalse(agents.ReasonPodFailed, "Pod failed")
	}
	msg, ready := "Pod exists with phase: "+string(pod.Status.Phase), false
	if pod.Status.Phase == corev1.PodRunning {
		switch {
		case !podReady(pod):
			msg = "Pod is Running but not Ready"
		case len(pod.Status.PodIPs) == 0:
			msg = "Pod is Ready but has no podIPs yet"
		default:
			msg, ready = "Pod is Ready", true
		}
	}
	if wantsService(sb) {
		if v.hasService {
			msg += "; Service Exists"
		} else {
			msg, ready = msg+"; Service does not exist", false
		}
	}
	if ready {
		return verdict{metav1.ConditionTrue, agents.ReasonDependenciesReady, msg}
	}
	return isFalse(agents.ReasonDependenciesNotReady, msg)
}
