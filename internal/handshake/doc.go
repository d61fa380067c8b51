// Package handshake turns a pod's launch token into the upstream auth cookie
// the node proxy sends to the agent web app.
//
// The agent app has no token API: it prints a launch token to its log and
// answers 401 until a client exchanges that token for its dsh-auth-* cookies.
// A Handshaker reads the token from the pod's CRI log files on this node
// (never through the API server's pods/log), exchanges it with one
// GET /?token=... and caches the resulting Cookie header value per
// (user, pod UID, Host). Neither the token nor the cookie is ever logged or
// put in an error.
//
// The stages, in request order, live in their own files: names.go validates
// the pod reference, reader.go and tail.go read a bounded tail of the log
// files, cri.go parses and joins CRI records, token.go finds the newest
// launch token, exchange.go trades it for the cookie and cache.go keeps the
// result. handshaker.go ties them together.
package handshake
