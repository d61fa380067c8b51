// Package handshake turns a pod's launch token into the upstream auth cookie
// the node proxy sends to the agent web app.
//
// The agent app has no token API: it prints a launch token to its log and
// answers 401 until a client exchanges that token for its dsh-auth-* cookies.
// A Handshaker finds the token on this node, never through the API server:
// in the app's launch line in the pod's CRI log files (the log source), or
// in a file the app writes into a volume of its pod (the file source). It
// exchanges the token with one GET /?token=... and caches the resulting
// Cookie header value per (user, pod UID, Host). Neither the token nor the
// cookie is ever logged or put in an error.
//
// Log output is not the app's alone (it logs request paths a link can
// choose, and agents print what they are told), so only lines shaped like
// the launch line count. The first launch line of the container's current
// start, which the app prints before an agent can print anything, is
// tried first; then the others of that start, newest first. A token the
// app answers 401 to is remembered and passed over before the candidates
// are capped: a planted line costs at most one exchange, once.
//
// The stages, in request order, live in their own files: names.go validates
// the pod reference; source.go picks the token source: reader.go and
// tail.go read a bounded head and tail of the log files, cri.go parses and
// joins CRI records, token.go finds the launch-line candidates,
// tokenfile.go reads a token file; safeopen.go opens both kinds of file without following
// symlinks. candidates.go tries the candidates, exchange.go trades one for
// the cookie, refused.go remembers refused tokens and cache.go keeps the
// result. handshaker.go ties them together.
package handshake
