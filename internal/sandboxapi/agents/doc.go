// Package agents holds sandgate's own Go types for the subset of the
// agent-sandbox API group agents.x-k8s.io, version v1beta1, that the platform
// reads or writes: the Sandbox kind. The fields follow the upstream contract
// recorded in shared/reference/agent-sandbox-contract.md.
//
// +kubebuilder:object:generate=true
// +groupName=agents.x-k8s.io
// +versionName=v1beta1
package agents
