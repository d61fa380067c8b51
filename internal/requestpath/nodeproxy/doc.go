// Package nodeproxy is the data path every browser byte crosses: a fasthttp
// reverse proxy that runs on every node and serves /u/<user>/** from that
// user's sandbox pod, and everything else from the auth API.
//
// The file list reads in pipeline order. serve (0handler.go) runs the
// stages in turn, each a type New builds once with its own settings:
//
//	1route_*    guard: the route, the client, whose forwarded, identity and
//	            hop headers count (begin); what must reach no upstream (check)
//	2session_*  sessions: a bearer token or a session cookie verified
//	            offline, renewal and entry codes through the auth API client,
//	            refusals per client; the watcher of open streams' sessions
//	3wake_*     waker: a Suspended or not-Ready sandbox woken and waited for
//	4forward_*  forwarder: the target resolved from informer caches, the
//	            app's launch-token handshake, and the one exchange with a pod
//	            on this node, the proxy of the pod's node or the auth API,
//	            with bodies, streams and WebSockets
//	5answer_*   answers: the one writer of the proxy's own answers (refusals,
//	            pages, redirects, WebSocket closes) and finish, where every
//	            request is counted and logged
//
// A stage returns a value or an error; serve alone turns an error into an
// answer. What a stage learns about the request goes on the exchange
// (exchange.go), the per-request record every stage writes and none holds
// on to. Unprefixed files are shared by stages or serve the server: the
// hop proof (hopproof.go), who a peer is (network.go), the activity count
// (tracker.go), limits, errors and their one mapping to statuses and close
// codes (errors.go), metrics, settings (options*.go) and the assembly,
// listeners and graceful shutdown (proxy.go, server.go, conns.go,
// certificate.go, ops.go).
package nodeproxy
