//go:build tools

// Package tools pins the local-path-provisioner command this module builds
// (its main package is the module root).
package tools

import (
	_ "github.com/rancher/local-path-provisioner"
)
