package handshake

import "errors"

// Sentinel errors returned (wrapped) by a Handshaker. The node proxy maps
// them to HTTP status codes in its one status mapper; the intended mapping is
// noted on each.
var (
	// ErrInvalidRef means a Target field failed validation (namespace, pod
	// name, UID, container, address, Host or forwarded headers). No path was
	// built and nothing was read. Proxy: 500, it is a bug upstream of us.
	ErrInvalidRef = errors.New("invalid pod reference")

	// ErrNoLogs means the pod's container log directory or its log files do
	// not exist on this node (yet). Proxy: 503.
	ErrNoLogs = errors.New("no pod logs on this node")

	// ErrUnsafePath means a log or token file, or a directory on its path,
	// is a symlink, not a plain directory or regular file, resolves
	// outside its root, or (token file) may be written by anyone.
	// Proxy: 500.
	ErrUnsafePath = errors.New("unsafe path")

	// ErrNoToken means no usable launch token was found: the bounded log
	// tail holds no launch line, the token file is missing or holds no
	// token, or the app refused every token found before. Proxy: 503
	// "missing launch token".
	ErrNoToken = errors.New("missing launch token")

	// ErrTokenRefused means the app answered 401 to a launch token: it is
	// not the running app's token (planted by other output, or left from
	// an earlier start). It always comes together with ErrExchange, so the
	// proxy maps it like any failed exchange. Proxy: 502.
	ErrTokenRefused = errors.New("launch token refused")

	// ErrExchange means the token exchange with the pod failed: transport
	// error, timeout or a status other than a redirect. Proxy: 502.
	ErrExchange = errors.New("token exchange failed")

	// ErrNoCookie means the pod redirected but set no auth cookie with the
	// configured prefix. Proxy: 502.
	ErrNoCookie = errors.New("token exchange returned no auth cookie")

	// ErrThrottled means the user caused MaxPerUser handshakes within the
	// last minute. Proxy: 503 with Retry-After.
	ErrThrottled = errors.New("too many handshakes for this user")

	// ErrClosed means the Handshaker was closed. Proxy: 503.
	ErrClosed = errors.New("handshaker closed")
)
