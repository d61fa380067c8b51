package extensions

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
)

// AnnotationSandboxName is set on a claim once it has adopted a Sandbox.
const AnnotationSandboxName = "agents.x-k8s.io/sandbox-name"

// UserLabelDomain is the label domain claims may use in additionalPodMetadata by default.
const UserLabelDomain = "sandbox.users.io"

// WarmPoolRef names the SandboxWarmPool a claim adopts a spare from.
type WarmPoolRef struct {
	Name string `json:"name"`
}

// Lifecycle bounds a claim's life.
type Lifecycle struct {
	// +optional
	ShutdownTime *metav1.Time `json:"shutdownTime,omitempty"`
	// TTLSecondsAfterFinished can fire while the claim's Sandbox is
	// suspended from v1.0.13 on (Finished survives a suspend): never set it
	// on a long-lived user claim.
	// +kubebuilder:validation:Minimum=0
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
	// ShutdownPolicy says what happens to the claim and its Sandbox once
	// ShutdownTime passes: Delete, DeleteForeground, or Retain (the default).
	// +kubebuilder:validation:Enum=Delete;DeleteForeground;Retain
	// +kubebuilder:default=Retain
	// +optional
	ShutdownPolicy agents.ShutdownPolicy `json:"shutdownPolicy,omitempty"`
}

// SandboxClaimSpec is the desired state of a SandboxClaim.
type SandboxClaimSpec struct {
	WarmPoolRef WarmPoolRef `json:"warmPoolRef"`
	// AdditionalPodMetadata is merged into the adopted Sandbox's pod.
	// +optional
	AdditionalPodMetadata agents.PodMetadata `json:"additionalPodMetadata,omitempty"`
	// +optional
	Lifecycle *Lifecycle `json:"lifecycle,omitempty"`
	// +listType=atomic
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// +listType=atomic
	// +optional
	VolumeClaimTemplates []agents.PersistentVolumeClaimTemplate `json:"volumeClaimTemplates,omitempty"`
}

// ClaimedSandbox points at the Sandbox a claim adopted.
type ClaimedSandbox struct {
	// Name is the adopted Sandbox's name: the pool spare's name after warm
	// adoption, so it is not the claim's name in general.
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	PodIPs []string `json:"podIPs,omitempty"`
}

// SandboxClaimStatus is the observed state of a SandboxClaim.
type SandboxClaimStatus struct {
	// +optional
	Sandbox ClaimedSandbox `json:"sandbox,omitempty"`
	// Conditions is an atomic list, as upstream declares it.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Claim-side reasons of the Ready condition.
const (
	ReasonWarmPoolNotFound         = "WarmPoolNotFound"
	ReasonSandboxMissing           = "SandboxMissing"
	ReasonEnvVarsInjectionRejected = "EnvVarsInjectionRejected"
)

// SandboxClaim asks for one Sandbox, adopted from a warm pool when a spare is Ready.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=sandboxclaims,scope=Namespaced
// +kubebuilder:printcolumn:name="Sandbox",type=string,JSONPath=`.status.sandbox.name`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
type SandboxClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec SandboxClaimSpec `json:"spec"`
	// +optional
	Status SandboxClaimStatus `json:"status,omitempty"`
}

// SandboxClaimList is a list of SandboxClaims.
//
// +kubebuilder:object:root=true
type SandboxClaimList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SandboxClaim `json:"items"`
}
