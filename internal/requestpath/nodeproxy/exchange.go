package nodeproxy

import (
	"net/netip"

	"github.com/sandgate/sandgate/internal/activity"
)

// Upstream kinds, for the access log.
const (
	upstreamPod     = "pod"
	upstreamPeer    = "peer"
	upstreamAuthAPI = "authapi"
)

// exchange is what the stages learn about one request, and how it ended
// (outcome). It holds copies, never the RequestCtx or its buffers, because
// a streamed response or a WebSocket outlives the handler.
type exchange struct {
	outcome

	route  route
	method string
	host   string // the request's Host
	peer   netip.Addr
	client netip.Addr // peer, or whom trusted proxies say they forward
	fwd    forwarded
	hopIn  bool
	ws     bool
	// asserted: the identity headers were kept (checkIdentity).
	asserted bool

	auth string // authentication method
	// session is the credential a WebSocket or stream checks again while
	// it is open.
	session  heldSession
	renewed  bool
	upstream string // pod, peer or authapi
	pod      string
	node     string
	retried  bool // the app answered 401 once and the request was retried
	// app is the retry rule and own headers of a request to a pod on
	// this node (toPod).
	app appRetry

	slot bool // holds one of the user's in-flight slots
	held bool // waited for its sandbox to wake

	// act is the sandbox the Tracker counts this request against, when
	// tracked; upgraded once it became a WebSocket.
	act      activity.Key
	tracked  bool
	upgraded bool
}

// Route slots past the route kinds: a request counts as one of these
// when it became a WebSocket or came from a peer.
const (
	slotWebSocket = int(routeKinds) + iota
	slotHopIn
	routeSlots
)

// routeSlot is the request's route for metrics: its kind, or one of the
// slots past the kinds.
func (x *exchange) routeSlot() int {
	switch {
	case x.ws:
		return slotWebSocket
	case x.hopIn:
		return slotHopIn
	}
	return int(x.route.kind)
}

// slotLabel names a route slot.
func slotLabel(slot int) string {
	switch slot {
	case slotWebSocket:
		return routeWebSocket
	case slotHopIn:
		return routeHopIn
	}
	return routeKind(slot).String()
}

// routeLabel is the request's route for metrics and the access log.
func (x *exchange) routeLabel() string { return slotLabel(x.routeSlot()) }
