package agents

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OperatingMode says whether a Sandbox should have a running pod.
// +kubebuilder:validation:Enum=Running;Suspended
type OperatingMode string

// Operating modes of a Sandbox.
const (
	OperatingModeRunning   OperatingMode = "Running"
	OperatingModeSuspended OperatingMode = "Suspended"
)

// ShutdownPolicy says what happens to a Sandbox or a claim when its shutdown
// time passes. Each field names the values it takes (a Sandbox takes no
// DeleteForeground): the enum is on the fields, not on this type.
type ShutdownPolicy string

// Shutdown policies of Sandbox and SandboxClaim lifecycles.
const (
	ShutdownPolicyDelete           ShutdownPolicy = "Delete"
	ShutdownPolicyDeleteForeground ShutdownPolicy = "DeleteForeground" // claims only
	ShutdownPolicyRetain           ShutdownPolicy = "Retain"
)

// PodMetadata is the subset of object metadata a pod template may carry.
type PodMetadata struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PodTemplate describes the pod a Sandbox runs.
type PodTemplate struct {
	// +optional
	Metadata PodMetadata    `json:"metadata,omitempty"`
	Spec     corev1.PodSpec `json:"spec"`
}

// VolumeClaimMetadata names a volume claim template; pods mount it by Name.
type VolumeClaimMetadata struct {
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// PersistentVolumeClaimTemplate describes a volume claim created for a Sandbox.
type PersistentVolumeClaimTemplate struct {
	// +optional
	Metadata VolumeClaimMetadata              `json:"metadata,omitempty"`
	Spec     corev1.PersistentVolumeClaimSpec `json:"spec"`
}

// SandboxSpec is the desired state of a Sandbox. Its volume claim templates
// can be neither added, removed nor changed after creation.
//
// +kubebuilder:validation:XValidation:rule="has(self.volumeClaimTemplates) == has(oldSelf.volumeClaimTemplates) && (!has(self.volumeClaimTemplates) || self.volumeClaimTemplates == oldSelf.volumeClaimTemplates)",message="volumeClaimTemplates is immutable"
type SandboxSpec struct {
	// OperatingMode is the one field the platform patches: Suspended deletes
	// the pod and keeps volumes and Service, Running brings a pod back.
	// +kubebuilder:default=Running
	// +optional
	OperatingMode OperatingMode `json:"operatingMode,omitempty"`
	PodTemplate   PodTemplate   `json:"podTemplate"`
	// +listType=atomic
	// +optional
	VolumeClaimTemplates []PersistentVolumeClaimTemplate `json:"volumeClaimTemplates,omitempty"`
	// +optional
	Service *bool `json:"service,omitempty"`
	// +optional
	ShutdownTime *metav1.Time `json:"shutdownTime,omitempty"`
	// ShutdownPolicy says what happens to the Sandbox once ShutdownTime
	// passes: Delete, or Retain (the default).
	// +kubebuilder:validation:Enum=Delete;Retain
	// +kubebuilder:default=Retain
	// +optional
	ShutdownPolicy ShutdownPolicy `json:"shutdownPolicy,omitempty"`
}

// SandboxStatus is the observed state of a Sandbox.
type SandboxStatus struct {
	// +optional
	ServiceFQDN string `json:"serviceFQDN,omitempty"`
	// +optional
	Service string `json:"service,omitempty"`
	// PodIPs and NodeName keep their old values while a pod terminates:
	// route only when the Ready condition is True.
	// +optional
	PodIPs []string `json:"podIPs,omitempty"`
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// +optional
	Selector string `json:"selector,omitempty"`
	// Conditions is an atomic list, as upstream declares it.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Sandbox is one isolated workload: a pod, its volumes and a headless Service.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=sandboxes,scope=Namespaced
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.operatingMode`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.nodeName`
type Sandbox struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec SandboxSpec `json:"spec"`
	// +optional
	Status SandboxStatus `json:"status,omitempty"`
}

// SandboxList is a list of Sandboxes.
//
// +kubebuilder:object:root=true
type SandboxList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Sandbox `json:"items"`
}
