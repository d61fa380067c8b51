// Package ssopreflight checks a live cluster for the conditions the SSO
// exposure variant's trust boundary rests on: a NetworkPolicy that lets
// only oauth2-proxy (and other node proxies) reach the node proxies, no
// other Service, Ingress or NodePort path to them, and the identity header
// kept only with oauth2-proxy's proof (AUTH_PROXY_SECRET_FILE), stripped
// from everyone else. cmd/sandgate-preflight runs it.
package ssopreflight
