package extensions

import (
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
)

// NetworkPolicyManagement says whether the controller owns a template's NetworkPolicy.
// +kubebuilder:validation:Enum=Managed;Unmanaged
type NetworkPolicyManagement string

// InjectionPolicy says whether claims may inject env vars or volume claim
// templates: Allowed adds them, Overrides also lets them replace the
// template's own of the same name.
// +kubebuilder:validation:Enum=Allowed;Overrides;Disallowed
type InjectionPolicy string

// Injection policies; Disallowed is the default.
const (
	InjectionAllowed    InjectionPolicy = "Allowed"
	InjectionOverrides  InjectionPolicy = "Overrides"
	InjectionDisallowed InjectionPolicy = "Disallowed"
)

// NetworkPolicySpec is the network policy a template applies to its sandboxes.
type NetworkPolicySpec struct {
	// +optional
	Ingress []networkingv1.NetworkPolicyIngressRule `json:"ingress,omitempty"`
	// +optional
	Egress []networkingv1.NetworkPolicyEgressRule `json:"egress,omitempty"`
}

// SandboxTemplateSpec is the blueprint pools and claims create Sandboxes from.
type SandboxTemplateSpec struct {
	PodTemplate agents.PodTemplate `json:"podTemplate"`
	// +listType=atomic
	// +optional
	VolumeClaimTemplates []agents.PersistentVolumeClaimTemplate `json:"volumeClaimTemplates,omitempty"`
	// +optional
	Service *bool `json:"service,omitempty"`
	// +optional
	NetworkPolicy *NetworkPolicySpec `json:"networkPolicy,omitempty"`
	// +kubebuilder:default=Managed
	// +optional
	NetworkPolicyManagement NetworkPolicyManagement `json:"networkPolicyManagement,omitempty"`
	// +kubebuilder:default=Disallowed
	// +optional
	EnvVarsInjectionPolicy InjectionPolicy `json:"envVarsInjectionPolicy,omitempty"`
	// +kubebuilder:default=Disallowed
	// +optional
	VolumeClaimTemplatesPolicy InjectionPolicy `json:"volumeClaimTemplatesPolicy,omitempty"`
}

// SandboxTemplate is a reusable Sandbox blueprint.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=sandboxtemplates,scope=Namespaced
type SandboxTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec SandboxTemplateSpec `json:"spec"`
}

// SandboxTemplateList is a list of SandboxTemplates.
//
// +kubebuilder:object:root=true
type SandboxTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SandboxTemplate `json:"items"`
}
