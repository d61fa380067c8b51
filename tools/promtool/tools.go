//go:build tools

// Package tools pins the Prometheus version whose promtool this module
// builds.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
