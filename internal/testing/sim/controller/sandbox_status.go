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

// sandboxStatus fills sb.Status from what the reconcile saw, following the
// upstream contract: Ready is True only while the pod is ready; podIPs and
// nodeName follow the pod and are cleared only once no pod exists; the
// Suspended condition is set back to False on resume, never removed.
func (c *Controller) sandboxStatus(sb *agents.Sandbox, v *sandboxView) {
	st := &sb.Status
	st.Selector = Selector(sb.Name)
	st.Service, st.ServiceFQDN = "", ""
	if v.hasService {
		st.Service = sb.Name
		st.ServiceFQDN = fmt.Sprintf("%s.%s.svc.%s", sb.Name, sb.Namespace, c.opts.ClusterDomain)
	}

	pod := v.pod()
	switch {
	case pod != nil:
		st.NodeName = pod.Spec.NodeName
		st.PodIPs = nil
		for _, ip := range pod.Status.PodIPs {
			st.PodIPs = append(st.PodIPs, ip.IP)
		}
	case len(v.pods) == 0:
		st.NodeName, st.PodIPs = "", nil
	}

	gen := sb.Generation
	ready := func(status metav1.ConditionStatus, reason, msg string) {
		setCondition(&st.Conditions, gen, agents.ConditionReady, status, reason, msg)
	}
	suspended := func(status metav1.ConditionStatus, reason, msg string) {
		setCondition(&st.Conditions, gen, agents.ConditionSuspended, status, reason, msg)
	}

	if operatingMode(sb) == agents.OperatingModeSuspended {
		ready(metav1.ConditionFalse, agents.ReasonSandboxSuspended, "Sandbox is suspended")
		if len(v.pods) > 0 {
			suspended(metav1.ConditionFalse, agents.ReasonPodTerminating, "Pod is terminating")
		} else {
			suspended(metav1.ConditionTrue, agents.ReasonPodTerminated, "Pod is terminated")
		}
		return
	}
	if findCondition(st.Conditions, agents.ConditionSuspended) != nil {
		suspended(metav1.ConditionFalse, agents.ReasonNotSuspended, "Sandbox is running")
	}
	switch {
	case len(v.pods) > 1:
		ready(metav1.ConditionFalse, agents.ReasonMultiplePods, fmt.Sprintf("%d pods are controlled by this Sandbox", len(v.pods)))
	case pod == nil && v.noNode:
		ready(metav1.ConditionFalse, agents.ReasonDependenciesNotReady, "No node to run the Pod on")
	case pod == nil:
		ready(metav1.ConditionFalse, agents.ReasonDependenciesNotReady, "Pod does not exist yet")
	case pod.DeletionTimestamp != nil:
		ready(metav1.ConditionFalse, agents.ReasonDependenciesNotReady, "Pod is terminating")
	case pod.Status.Phase == corev1.PodFailed:
		ready(metav1.ConditionFalse, agents.ReasonPodFailed, "Pod failed")
	case pod.Status.Phase == corev1.PodSucceeded:
		ready(metav1.ConditionFalse, agents.ReasonPodSucceeded, "Pod succeeded")
	case podReady(pod):
		ready(metav1.ConditionTrue, agents.ReasonDependenciesReady, "Pod is Ready")
	default:
		ready(metav1.ConditionFalse, agents.ReasonDependenciesNotReady, "Pod is not Ready")
	}
}
