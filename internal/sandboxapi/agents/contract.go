package agents

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Condition types on a Sandbox (and mirrored on a SandboxClaim).
const (
	ConditionReady     = "Ready"
	ConditionSuspended = "Suspended"
	// ConditionFinished is True once a pod has terminated (Succeeded or
	// Failed). v0.5.x removes it with that pod; v1.0.13 keeps it, True
	// across a suspend, so it never decides whether the current pod runs.
	ConditionFinished = "Finished"
)

// Reasons of the Ready condition seen upstream.
const (
	ReasonDependenciesReady    = "DependenciesReady"
	ReasonDependenciesNotReady = "DependenciesNotReady"
	ReasonSandboxSuspended     = "SandboxSuspended"
	ReasonPodSucceeded         = "PodSucceeded"
	ReasonPodFailed            = "PodFailed"
	ReasonSandboxExpired       = "SandboxExpired"
	ReasonReconcilerError      = "ReconcilerError"
	ReasonMultiplePods         = "MultiplePods"
	// ReasonInvalidConfiguration (v1.0.4+) is a permanent rejection by the
	// API server of something the controller derives from the Sandbox; the
	// controller does not retry it.
	ReasonInvalidConfiguration = "InvalidConfiguration"
)

// Reasons of the Suspended condition seen upstream.
const (
	ReasonPodTerminated   = "PodTerminated"
	ReasonPodTerminating  = "PodTerminating"
	ReasonPodNotOwned     = "PodNotOwned"
	ReasonNotSuspended    = "NotSuspended"
	ReasonPodStateUnknown = "PodStateUnknown"
)

// Labels and annotations the controller sets.
const (
	// AnnotationPodName names the Sandbox's current pod in v0.5.x, cleared
	// once it is gone. v1.0 no longer writes it (the pod has the Sandbox's
	// name): a legacy hint only; the pod's controller ownerReference is the
	// link every release keeps.
	AnnotationPodName = "agents.x-k8s.io/pod-name"
	// LabelSandboxNameHash is the FNV-32a hex of the Sandbox name on its pod,
	// and the selector of its headless Service.
	LabelSandboxNameHash = "agents.x-k8s.io/sandbox-name-hash"
	// LabelWarmPoolSandbox marks unclaimed pool Sandboxes and pods.
	LabelWarmPoolSandbox = "agents.x-k8s.io/warm-pool-sandbox"
	// LabelClaimUID is the UID of the claim that adopted a Sandbox.
	LabelClaimUID = "agents.x-k8s.io/claim-uid"
	// LabelLaunchType is "warm" for an adopted spare and "cold" otherwise.
	LabelLaunchType = "agents.x-k8s.io/launch-type"
	// LabelTemplateRefHash is a hash of the template a Sandbox came from.
	LabelTemplateRefHash = "agents.x-k8s.io/sandbox-template-ref-hash"
	// LabelCreatedBy names the controller that created an object.
	LabelCreatedBy = "agents.x-k8s.io/created-by"
)

// Launch types recorded in LabelLaunchType.
const (
	LaunchTypeWarm = "warm"
	LaunchTypeCold = "cold"
)

// Terminated reports whether sb's current pod has stopped for good: Ready
// is False because the pod failed or exited (node eviction, spot reclaim).
// The Finished condition alone says nothing about the current pod: from
// v1.0.13 it stays True after a suspend and across later pods that never
// finished. The landing page and the node proxies show this state; the
// auth API's leader then deletes the pod so the controller creates it
// again.
func Terminated(sb *Sandbox) bool {
	c := readyCondition(sb)
	return c != nil && c.Status == metav1.ConditionFalse &&
		(c.Reason == ReasonPodFailed || c.Reason == ReasonPodSucceeded)
}

// InvalidConfiguration reports whether the controller gave up on sb for
// good (v1.0.4+): the API server permanently rejected something derived
// from it, so no wake, wait or pod deletion helps until an operator changes
// it. It returns the controller's message, which names what was rejected.
func InvalidConfiguration(sb *Sandbox) (string, bool) {
	c := readyCondition(sb)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonInvalidConfiguration {
		return "", false
	}
	return c.Message, true
}

// Invalid reports whether InvalidConfiguration holds for sb.
func Invalid(sb *Sandbox) bool {
	_, ok := InvalidConfiguration(sb)
	return ok
}

func readyCondition(sb *Sandbox) *metav1.Condition {
	for i := range sb.Status.Conditions {
		if sb.Status.Conditions[i].Type == ConditionReady {
			return &sb.Status.Conditions[i]
		}
	}
	return nil
}

// Conditions and reasons of the PodScheduled and Finished conditions.
const (
	// ConditionPodScheduled mirrors the owned pod's PodScheduled condition
	// (v0.5.6+). v0.5.x removes it while no owned pod exists; v1.0.13
	// keeps it, False with ReasonPodAbsent: read its status, never its
	// presence.
	ConditionPodScheduled = "PodScheduled"
	// ReasonPodScheduled is PodScheduled's reason when the pod's own
	// condition is True without a reason, as the scheduler leaves it.
	ReasonPodScheduled = "PodScheduled"
	// ReasonPodSchedulingUnknown is PodScheduled's reason while the pod
	// has not reported the condition, or reported it without a reason.
	ReasonPodSchedulingUnknown = "PodSchedulingUnknown"
	// ReasonPodAbsent (v1.0.13) is PodScheduled False while no owned pod
	// exists, e.g. when suspended.
	ReasonPodAbsent = "PodAbsent"
	// ReasonNotFinished (v1.0.13) is Finished False once a pod after the
	// one that finished exists and has not finished.
	ReasonNotFinished = "NotFinished"
)
