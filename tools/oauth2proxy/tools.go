//go:build tools

// Package tools pins the oauth2-proxy version this module builds.
package tools

import _ "github.com/oauth2-proxy/oauth2-proxy/v7"
