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

	// ErrUnsafePath means a log directory or file is a symlink, not a plain
	// directory or regular file, or resolves outside the log root. Proxy: 500.
	ErrUnsafePath = errors.New("unsafe log path")

	// ErrNoToken means the bounded log tail holds no launch token line.
	// Proxy: 503 "missing launch token".
	ErrNoToken = errors.New("missing launch token")

	// ErrExchange means the token exchange with the pod failed: transport
	// error, timeout or a status other than a redirect. Proxy: 502.
	ErrExchange = errors.New("token exchange failed")

	// ErrNoCookie means the pod redirected but set no auth cookie with the
	// configured prefix. Proxy: 502.
	ErrNoCookie = errors.New("token exchange returned no auth cookie")

	// ErrClosed means the Handshaker was closed. Proxy: 503.
	ErrClosed = errors.New("handshaker closed")
)
