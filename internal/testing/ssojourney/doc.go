// Package ssojourney tests the SSO exposure variant end to end with its real
// parts: the oauth2-proxy binary in front of the auth API and node proxy
// binaries, configured as manifests/exposure/sso configures them, signing
// users in at an OpenID Connect provider stand-in (mockoidc), on a real API
// server with the simulated cluster of internal/testing/sim; and the shipped
// preflight (cmd/sandgate-preflight) against that API server and a node
// proxy. Tests only.
package ssojourney
