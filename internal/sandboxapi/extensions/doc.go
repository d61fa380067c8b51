// Package extensions holds sandgate's own Go types for the subset of the
// agent-sandbox API group extensions.agents.x-k8s.io, version v1beta1, that
// the platform uses: SandboxClaim, SandboxWarmPool and SandboxTemplate. The
// fields follow shared/reference/agent-sandbox-contract.md.
//
// +kubebuilder:object:generate=true
// +groupName=extensions.agents.x-k8s.io
// +versionName=v1beta1
package extensions
