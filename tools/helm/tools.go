//go:build tools

// Package tools pins the Helm version whose helm command this module builds
// to render and lint charts/sandgate.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
