//go:build tools

// Package tools pins the NetworkPolicy enforcer this module builds.
package tools

import _ "sigs.k8s.io/kube-network-policies/cmd"
