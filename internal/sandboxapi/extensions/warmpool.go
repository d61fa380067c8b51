package extensions

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// UpdateStrategyType says how a pool treats spares when its template changes.
// +kubebuilder:validation:Enum=OnReplenish;Recreate
type UpdateStrategyType string

// Pool update strategies.
const (
	UpdateStrategyOnReplenish UpdateStrategyType = "OnReplenish"
	UpdateStrategyRecreate    UpdateStrategyType = "Recreate"
)

// TemplateRef names a SandboxTemplate.
type TemplateRef struct {
	Name string `json:"name"`
}

// UpdateStrategy of a SandboxWarmPool.
type UpdateStrategy struct {
	// +kubebuilder:default=OnReplenish
	// +optional
	Type UpdateStrategyType `json:"type,omitempty"`
}

// SandboxWarmPoolSpec is the desired state of a SandboxWarmPool.
type SandboxWarmPoolSpec struct {
	// Replicas is always sent, 0 included; the server's default applies
	// only to objects written without it (kubectl, YAML).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=1
	// +optional
	Replicas           int32       `json:"replicas"`
	SandboxTemplateRef TemplateRef `json:"sandboxTemplateRef"`
	// +optional
	UpdateStrategy UpdateStrategy `json:"updateStrategy,omitempty"`
	// ReadinessGracePeriodSeconds (agent-sandbox v1.0.12+) is how long a
	// spare may take to become Ready before the pool replaces it; unset, the
	// controller's flag or agent-sandbox-config ConfigMap decides (default
	// 5 minutes). Older releases' CRDs prune it.
	// +kubebuilder:validation:Minimum=30
	// +optional
	ReadinessGracePeriodSeconds *int32 `json:"readinessGracePeriodSeconds,omitempty"`
}

// SandboxWarmPoolStatus is the observed state of a SandboxWarmPool.
type SandboxWarmPoolStatus struct {
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// +optional
	Selector string `json:"selector,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// SandboxWarmPool keeps a number of Ready spare Sandboxes for claims to adopt.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:path=sandboxwarmpools,scope=Namespaced,shortName=swp
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
type SandboxWarmPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec SandboxWarmPoolSpec `json:"spec"`
	// +optional
	Status SandboxWarmPoolStatus `json:"status,omitempty"`
}

// SandboxWarmPoolList is a list of SandboxWarmPools.
//
// +kubebuilder:object:root=true
type SandboxWarmPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SandboxWarmPool `json:"items"`
}
