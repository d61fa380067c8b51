// Package nodeproxy is the data path every browser byte crosses: a fasthttp
// reverse proxy that runs on every node and serves /u/<user>/** from that
// user's sandbox pod, and everything else from the auth API.
//
// Each request runs the stages of handler.go in order: the path router
// (route.go), authentication (auth.go, with session renewal in renew.go),
// resolution from informer caches only (resolve.go), the upstream cookie
// handshake (handshake.go), then the proxy itself. Every upstream is
// reached through one exchange (forward.go): HTTP with streamed bodies
// (stream.go), or a bridged WebSocket (ws.go); what differs between the
// pod on this node (proxy.go), a single hop to the node that runs the pod
// (hop.go, its HMAC proof with the shared hop key in hopauth.go) and the
// auth API (authapi.go) is data: target, header policy, body rule, retry
// rule. Before resolution, a request for a Suspended or not-Ready sandbox
// is held while the auth API wakes it (wake.go), and every proxied
// request, body chunk and WebSocket data frame is counted in the activity
// table the node reports for idle suspend (internal/activity). Renewal,
// redemption, wake and activity reports share one auth API client
// (authclient.go). headerrules.go holds the header rules of every direction
// (package headerrule), headers.go the forwarded headers, limits.go the
// per-user in-flight cap, errors.go the one mapping from outcomes to
// statuses and WebSocket close codes, outcome.go the one way a request
// ends (the proxy's own answers and pages, metrics and the access-log
// line of accesslog.go), server.go the listeners (plain HTTP, and HTTPS
// with the certificate of certificate.go, reloaded when its files change),
// timeouts and graceful shutdown.
package nodeproxy
