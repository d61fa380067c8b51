package nodeproxy

import (
	"errors"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/informer"
)

// Outcomes that end a request early. Stages wrap them with %w; resultOf maps
// them to what the client sees, in this one place.
var (
	// ErrBadRequest means a malformed path, Host or header.
	ErrBadRequest = errors.New("bad request")
	// ErrNotFound means a path /u/<name>/ whose name cannot be a user.
	ErrNotFound = errors.New("not found")
	// ErrUnauthenticated means no credential, a bad or revoked one, or one for
	// another user.
	ErrUnauthenticated = errors.New("unauthenticated")
	// ErrCrossOrigin means an unsafe request or a WebSocket upgrade to an
	// agent made by a page of another origin or site.
	ErrCrossOrigin = errors.New("cross-origin request refused")
	// ErrServiceWorker means a service worker script asked for outside
	// an agent's own scope.
	ErrServiceWorker = errors.New("service worker script refused")
	// ErrTooManyEntries means a client had too many entry codes refused
	// lately.
	ErrTooManyEntries = errors.New("too many refused entries from this client")
	// ErrTooManyRenewals means a client had too many sessions of unknown
	// keys refused lately, each of which cost a renewal call.
	ErrTooManyRenewals = errors.New("too many refused renewals from this client")
	// ErrTooManyInFlight means the user's MAX_IN_FLIGHT_PER_USER is reached.
	ErrTooManyInFlight = errors.New("too many requests in flight for this user")
	// ErrStopped means the sandbox's pod terminated (node eviction, spot
	// reclaim) and is being created again: no wake or wait helps.
	ErrStopped = errors.New("sandbox pod stopped")
	// ErrInvalidConfiguration means the agent-sandbox controller gave up on
	// the sandbox for good (Ready reason InvalidConfiguration): no wake,
	// wait or retry helps until an operator changes it.
	ErrInvalidConfiguration = errors.New("sandbox configuration rejected by the cluster")
	// ErrSuspended means the sandbox is suspended and wake-on-connect is off.
	ErrSuspended = errors.New("sandbox suspended")
	// ErrWakeTimeout means a held request's sandbox did not become Ready
	// within WAKE_TIMEOUT.
	ErrWakeTimeout = errors.New("sandbox still waking")
	// ErrNotReady means the sandbox is not Ready, or the caches lag behind it.
	ErrNotReady = errors.New("sandbox not ready")
	// ErrHopLoop means a request that already hopped would have to hop again.
	ErrHopLoop = errors.New("sandbox not on this node after a hop")
	// ErrMoved means the proxy of the sandbox's node answered a hop with
	// movedHeader: the sandbox is Ready on yet another node.
	ErrMoved = errors.New("sandbox moved to another node during the hop")
	// ErrPeerDown means the node proxy of the sandbox's node took no
	// connection (it is restarting, or its node is gone): the request
	// never reached it.
	ErrPeerDown = errors.New("node proxy of the sandbox's node unreachable")
	// ErrBodyTooLarge means the request body exceeds MAX_BODY_MB.
	ErrBodyTooLarge = errors.New("request body too large")
	// ErrClientClosed means the client went away before its request was
	// complete; logged as 499.
	ErrClientClosed = errors.New("client closed request")
	// ErrUpstream means the upstream (pod, peer proxy or auth API) failed.
	ErrUpstream = errors.New("upstream unavailable")
	// ErrAuthAPIUnavailable means no auth API replica answered a renewal,
	// a wake or a forwarded sign-in: not a refusal, so the cookie stays.
	ErrAuthAPIUnavailable = errors.New("auth API unavailable")
	// ErrUpstreamTimeout means the upstream stayed silent too long.
	ErrUpstreamTimeout = errors.New("upstream timed out")
	// ErrShuttingDown means the proxy is draining.
	ErrShuttingDown = errors.New("shutting down")
)

// invalidConfigurationMessage is the answer for ErrInvalidConfiguration.
// It names the cause without the controller's message, which an operator
// reads on the Sandbox and in the auth API's audit log.
const invalidConfigurationMessage = "your agent cannot start: the cluster rejected its configuration (InvalidConfiguration); an operator must fix it, retrying will not help"

// errNoConnection is a round trip whose connection could not be made, so
// nothing was sent.
var errNoConnection = errors.New("no connection")

// StatusClientClosed is nginx's code for a request the client abandoned.
const StatusClientClosed = 499

// closeUnauthenticated is the WebSocket close code for a failed login.
const closeUnauthenticated = 4401

// result is what a failed request turns into.
type result struct {
	status     int
	message    string // short and safe for the client
	retryAfter bool
	wsClose    int // WebSocket close code when the upgrade was accepted
}

// resultOf maps an error to the client's answer. It is the only place that
// knows status codes for errors.
func resultOf(err error) result {
	r := func(status int, msg string) result {
		return result{status: status, message: msg, wsClose: websocket.CloseInternalServerErr}
	}
	switch {
	case errors.Is(err, ErrBadRequest):
		return r(fasthttp.StatusBadRequest, "bad request")
	case errors.Is(err, ErrNotFound):
		return r(fasthttp.StatusNotFound, "not found")
	case errors.Is(err, ErrCrossOrigin):
		return r(fasthttp.StatusForbidden, "cross-origin request refused")
	case errors.Is(err, ErrServiceWorker):
		return r(fasthttp.StatusForbidden, "service worker script refused")
	case errors.Is(err, ErrAuthAPIUnavailable):
		res := r(fasthttp.StatusServiceUnavailable, authAPIDownMessage(err))
		res.retryAfter = true
		res.wsClose = websocket.CloseTryAgainLater
		return res
	case errors.Is(err, informer.ErrNotSynced):
		res := r(fasthttp.StatusServiceUnavailable, "starting up, retry shortly")
		res.retryAfter = true
		res.wsClose = websocket.CloseTryAgainLater
		return res
	case errors.Is(err, ErrUnauthenticated), errors.Is(err, informer.ErrNoAccount), errors.Is(err, informer.ErrInvalidAccount):
		res := r(fasthttp.StatusUnauthorized, "sign in required")
		res.wsClose = closeUnauthenticated
		return res
	case errors.Is(err, ErrBodyTooLarge):
		return r(fasthttp.StatusRequestEntityTooLarge, "request body too large")
	case errors.Is(err, ErrClientClosed):
		return r(StatusClientClosed, "client closed request")
	case errors.Is(err, ErrTooManyEntries), errors.Is(err, ErrTooManyRenewals):
		res := r(fasthttp.StatusTooManyRequests, "too many attempts, retry later")
		res.retryAfter = true
		return res
	case errors.Is(err, ErrTooManyInFlight), errors.Is(err, handshake.ErrThrottled):
		res := r(fasthttp.StatusServiceUnavailable, "too many requests, retry shortly")
		res.retryAfter = true
		return res
	case errors.Is(err, ErrWakeTimeout):
		res := r(fasthttp.StatusServiceUnavailable, "sandbox still waking, retry shortly")
		res.retryAfter = true
		return res
	case errors.Is(err, ErrStopped):
		res := r(fasthttp.StatusServiceUnavailable, "your agent's pod stopped (node eviction or failure); it is being started again")
		res.retryAfter = true
		res.wsClose = websocket.CloseTryAgainLater
		return res
	case errors.Is(err, ErrInvalidConfiguration):
		return r(fasthttp.StatusServiceUnavailable, invalidConfigurationMessage)
	case errors.Is(err, ErrSuspended), errors.Is(err, ErrNotReady), errors.Is(err, ErrHopLoop), errors.Is(err, ErrMoved), errors.Is(err, ErrPeerDown),
		errors.Is(err, handshake.ErrNoLogs), errors.Is(err, handshake.ErrClosed), errors.Is(err, ErrShuttingDown):
		res := r(fasthttp.StatusServiceUnavailable, "sandbox not available yet")
		res.retryAfter = true
		return res
	case errors.Is(err, handshake.ErrNoToken):
		res := r(fasthttp.StatusServiceUnavailable, "missing launch token")
		res.retryAfter = true
		return res
	case errors.Is(err, handshake.ErrExchange), errors.Is(err, handshake.ErrNoCookie), errors.Is(err, ErrUpstream):
		return r(fasthttp.StatusBadGateway, "upstream unavailable")
	case errors.Is(err, ErrUpstreamTimeout):
		return r(fasthttp.StatusGatewayTimeout, "upstream timed out")
	}
	// handshake.ErrInvalidRef, ErrUnsafePath and anything unforeseen.
	return r(fasthttp.StatusInternalServerError, "internal error")
}
