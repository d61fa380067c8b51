// Package controlplane starts a real etcd and kube-apiserver on loopback ports
// in a temporary directory: RBAC on, ServiceAccount token issuance and review
// working, the agent-sandbox CRDs given (upstream's own or the generated ones,
// a conversion webhook replaced by strategy None) installed and Established.
// Integration tests and the local demo stand on it; it never runs in a
// production binary.
//
// Child processes run in their own process group with a parent-death signal,
// so they die with the process that started them even when it is killed.
package controlplane
