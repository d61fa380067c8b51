package agents

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Condition types on a Sandbox (and mirrored on a SandboxClaim).
const (
	ConditionReady     = "Ready"
	ConditionSuspended = "Suspended"
	// ConditionFinished is set True by newer controllers once the pod has
	// terminated (Succeeded or Failed).
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
	// AnnotationPodName names the Sandbox's current pod; cleared once it is gone.
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

// Terminated reports whether sb's pod has stopped for good: the Sandbox
// says Finished, or Ready is False because the pod failed or exited
// (node eviction, spot reclaim). The landing page and the node proxies
// show this state; the auth API's leader then deletes the pod so the
// controller creates it again.
func Terminated(sb *Sandbox) bool {
	for _, c := range sb.Status.Conditions {
		switch {
		case c.Type == ConditionFinished && c.Status == metav1.ConditionTrue:
			return true
		case c.Type == ConditionReady && c.Status == metav1.ConditionFalse &&
			(c.Reason == ReasonPodFailed || c.Reason == ReasonPodSucceeded):
			return true
		}
	}
	return false
}
