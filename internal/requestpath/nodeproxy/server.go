package nodeproxy

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/deadlineconn"
	"github.com/sandgate/sandgate/internal/openset"
)

// Proxy is the node proxy. Build it with New, run it with Serve. It is
// safe for concurrent use.
type Proxy struct {
	opts   Options
	log    *slog.Logger
	access *slog.Logger
	// successes stands for plain successes in the access log; nil when
	// every request gets its own line.
	successes *successes
	m         *metrics
	rules     headerRules
	inflight  *inFlight
	authAPI   *authClient // renewal, redemption, wake, activity reports
	renewer   *renewer
	waker     *waker
	entries   *failLimiter     // refused entry codes per client
	unknown   *failLimiter     // refused sessions of unknown keys per client
	uploads   *uploads         // what bodies that cannot be sent twice need
	client    *fasthttp.Client // pods, peers and the auth API
	hopValue  string           // X-Sandgate-Hop value: this node's name
	hopAuth   *hopAuth         // signs and verifies hops; nil without a hop key
	mainHost  string           // host[:port] of PublicOrigin, the apps' Host on user origins
	// authProxyHeader is AuthProxyHeader lower-cased, or "".
	authProxyHeader string

	upgrader websocket.FastHTTPUpgrader
	dialer   *websocket.Dialer
	sockets  *wsRegistry
	streams  *streamRegistry
	// watches are the open WebSockets' and streams' session watches.
	watches openset.Set[*sessionWatch]
	// accounts is the Directory as an AccountWatcher, or nil.
	accounts AccountWatcher

	draining atomic.Bool
}

// hopHeader marks a request forwarded by another node's proxy; its value
// is the sending node. Anyone can send it, so on its own it only ever
// restricts: a request carrying it is never forwarded again (the loop
// guard) and never renews a session. Its forwarded headers are trusted
// when its proof (hopAuthHeader) verifies with the hop key, or, without a
// hop key, when the peer is a node (Peers).
const hopHeader = "X-Sandgate-Hop"

// wsReadBuffer is the read buffer each side of a bridged WebSocket holds
// for as long as it is open: room for a frame header, a control frame and
// small messages. A larger payload bypasses it, read straight into the
// other side's pooled write buffer (pump copies into the message writer,
// whose ReadFrom reads into that buffer, and bufio reads directly into a
// buffer larger than its own).
const wsReadBuffer = 512

// New fills defaults and builds the proxy's clients, rules and metrics
// once. Its settings must be valid: they are checked where they are
// loaded (nodeproxyd's Config.Validate, with the Check functions of this
// package), and other callers check o with Validate. New refuses only
// missing collaborators.
func New(o Options) (*Proxy, error) {
	if err := o.missing(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	streams := new(streamRegistry)
	m, err := newMetrics(o.Registerer, gauges{openStreams: streams.Len, jwksRefreshed: o.JWKSRefreshed})
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		opts:            o,
		log:             o.Logger.With("component", "nodeproxy"),
		access:          o.Logger.With("component", "access"),
		successes:       newSuccessesIf(o.AccessLogSummary > 0),
		m:               m,
		rules:           newHeaderRules(o.HeaderAllowlist, o.AuthProxyHeader),
		inflight:        newInFlight(o.MaxInFlightPerUser),
		hopValue:        o.NodeName,
		authProxyHeader: strings.ToLower(o.AuthProxyHeader),
		sockets:         new(wsRegistry),
		streams:         streams,
	}
	p.client = &fasthttp.Client{
		NoDefaultUserAgentHeader: true,
		Dial:                     p.dialHTTP,
		StreamResponseBody:       true,
		DisablePathNormalizing:   true,
		MaxIdleConnDuration:      30 * time.Second,
		MaxConnsPerHost:          4096,
		ReadBufferSize:           o.MaxHeaderBytes,
		WriteBufferSize:          16 << 10,
		TLSConfig:                &tls.Config{MinVersion: tls.VersionTLS12},
		RetryIfErr:               retryStale,
	}
	// A bridged WebSocket holds write buffers only while it writes: most
	// are idle, and 10,000 of them would otherwise pin 80 MB. Its read
	// buffers are held for its life, so they are small (wsReadBuffer).
	writeBuffers := &sync.Pool{}
	p.upgrader = websocket.FastHTTPUpgrader{
		// checkOrigin has refused a foreign Origin before the upstream
		// was dialled; the library's own check would come only after.
		CheckOrigin:      func(*fasthttp.RequestCtx) bool { return true },
		HandshakeTimeout: o.HeaderTimeout,
		ReadBufferSize:   wsReadBuffer,
		WriteBufferSize:  4 << 10,
		WriteBufferPool:  writeBuffers,
	}
	p.dialer = &websocket.Dialer{
		NetDialContext:   p.dialWS,
		HandshakeTimeout: o.DialTimeout + o.HeaderTimeout,
		ReadBufferSize:   wsReadBuffer,
		WriteBufferSize:  4 << 10,
		WriteBufferPool:  writeBuffers,
	}
	if u, err := url.Parse(o.PublicOrigin); err == nil {
		p.mainHost = u.Host
	}
	if o.HopKey != nil {
		p.hopAuth = newHopAuth(o.HopKey, o.Now, hopNonces)
	}
	p.authAPI = newAuthClient(o, m, p.dialNet)
	p.renewer = newRenewer(o, m, p.authAPI)
	p.waker = newWaker(o, p.authAPI)
	p.entries = newFailLimiter(refusalBurst, refusalEvery, o.Now)
	p.unknown = newFailLimiter(refusalBurst, refusalEvery, o.Now)
	p.uploads = newUploads(p)
	p.accounts, _ = o.Directory.(AccountWatcher)
	if p.accounts == nil {
		p.log.Warn("the directory reports no account changes: open WebSockets and streams end at their session's maximum age only")
	}
	return p, nil
}

// dial connects to addr with the configured dialer and timeout.
func (p *Proxy) dial(addr string) (net.Conn, error) {
	if p.opts.Dial != nil {
		return p.opts.Dial(addr)
	}
	return net.DialTimeout("tcp", addr, p.opts.DialTimeout)
}

// dialHTTP connects the HTTP client: reads must make progress within
// UpstreamIdleTimeout.
func (p *Proxy) dialHTTP(addr string) (net.Conn, error) {
	c, err := p.dial(addr)
	if err != nil {
		return nil, err
	}
	return deadlineconn.New(c, p.opts.UpstreamIdleTimeout, p.opts.WriteTimeout), nil
}

// dialWS connects a WebSocket upstream: an idle socket is fine, so only
// writes are bounded.
func (p *Proxy) dialWS(_ context.Context, _, addr string) (net.Conn, error) {
	c, err := p.dial(addr)
	if err != nil {
		return nil, err
	}
	return deadlineconn.New(c, 0, p.opts.WriteTimeout), nil
}

func (p *Proxy) dialNet(_ context.Context, _, addr string) (net.Conn, error) { return p.dial(addr) }

// Handler returns the request handler, for tests and benchmarks that run
// their own server.
func (p *Proxy) Handler() fasthttp.RequestHandler { return p.serve }

// newServer builds the fasthttp server with the limits against slow or
// hostile clients.
func (p *Proxy) newServer() *fasthttp.Server {
	o := p.opts
	return &fasthttp.Server{
		Handler:               p.serve,
		ErrorHandler:          p.serveError,
		NoDefaultServerHeader: true,
		NoDefaultDate:         true,
		NoDefaultContentType:  true,
		ReadTimeout:           o.HeaderTimeout,
		IdleTimeout:           o.IdleTimeout,
		ReadBufferSize:        o.MaxHeaderBytes,
		WriteBufferSize:       16 << 10,
		// Streamed bodies: the handler runs once the headers and at most
		// one body byte are in, so it decides how much to buffer and sees
		// an aborted upload itself.
		StreamRequestBody:            true,
		MaxRequestBodySize:           1,
		DisablePreParseMultipartForm: true,
		HeaderReceived: func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
			return fasthttp.RequestConfig{ReadTimeout: o.BodyTimeout}
		},
		// A client that asks before sending its body learns about the
		// limit without sending it.
		ExpectHandler:         p.expect,
		CloseOnShutdown:       true,
		SecureErrorLogMessage: true,
		TCPKeepalive:          true,
		Logger:                fasthttpLogger{p.log},
		// The worker pool's cleaner notices a stopped server only after
		// this long.
		MaxIdleWorkerDuration: time.Second,
	}
}

// Listener is a socket the proxy serves: plain HTTP, or HTTPS when TLS is
// set.
type Listener struct {
	net.Listener
	// TLS, when set, terminates TLS on every accepted connection, which
	// then counts as https (X-Forwarded-Proto). It needs Certificates or
	// GetCertificate; versions below TLS 1.2 are never offered.
	TLS *tls.Config
}

// Serve serves on ln until ctx ends, then shuts down gracefully: /readyz
// fails, WebSockets get close 1001, event streams end (clients reconnect),
// other requests drain for up to DrainTimeout, and whatever is still open
// then is closed. It closes ln and returns nil after a clean shutdown, once
// every connection it accepted is closed: a 1001 still being written to a
// WebSocket refused as the shutdown began is not cut off.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	return p.ServeAll(ctx, Listener{Listener: ln})
}

// ServeAll is Serve on several listeners at once, with one shutdown that
// drains them all; a listener that fails stops the others too. Call Serve
// or ServeAll once per Proxy: shutdown ends every WebSocket and stream the
// proxy holds.
func (p *Proxy) ServeAll(ctx context.Context, lns ...Listener) error {
	if len(lns) == 0 {
		return errors.New("serve: no listener")
	}
	srv := p.newServer()
	tracked := make([]*listener, len(lns))
	served := make(chan error, len(lns))
	for i, l := range lns {
		tracked[i] = p.newClientListener(l.Listener)
		// TLS goes outside the tracking listener, so every encrypted
		// byte still gets the write deadline and fasthttp sees the
		// *tls.Conn that makes ctx.IsTLS() true.
		var ln net.Listener = tracked[i]
		if l.TLS != nil {
			ln = tls.NewListener(ln, serverTLS(l.TLS))
		}
		go func() { served <- srv.Serve(ln) }()
	}
	if p.successes != nil {
		summaryCtx, stopSummary := context.WithCancel(context.WithoutCancel(ctx))
		summarised := make(chan struct{})
		go func() {
			defer close(summarised)
			p.successes.run(summaryCtx, p.access, p.opts.AccessLogSummary)
		}()
		defer func() { stopSummary(); <-summarised }()
	}
	pending := len(lns)
	var failed error
	select {
	case err := <-served:
		pending--
		failed = fmt.Errorf("serve: %w", cmp.Or(err, net.ErrClosed))
		p.log.Error("a listener stopped; shutting down", "err", failed)
	case <-ctx.Done():
	}
	p.shutdown(ctx, srv, tracked)
	for ; pending > 0; pending-- {
		<-served
	}
	p.client.CloseIdleConnections()
	return failed
}

// serverTLS is c for a client-facing listener: at least TLS 1.2, and
// HTTP/1.1 as the only application protocol fasthttp speaks.
func serverTLS(c *tls.Config) *tls.Config {
	c = c.Clone()
	c.MinVersion = max(c.MinVersion, tls.VersionTLS12)
	if len(c.NextProtos) == 0 {
		c.NextProtos = []string{"http/1.1"}
	}
	return c
}

// shutdown drains srv and closes what is left on its listeners.
func (p *Proxy) shutdown(ctx context.Context, srv *fasthttp.Server, lns []*listener) {
	p.draining.Store(true)
	p.log.Info("shutting down", "websockets", p.sockets.Len(), "streams", p.streams.Len())
	drain, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.opts.DrainTimeout)
	defer cancel()
	p.sockets.closeAll()
	p.streams.closeAll(true)
	// Past the deadline ShutdownWithContext leaves the rest running;
	// any other error is from closing a listener that already failed.
	late := srv.ShutdownWithContext(drain) != nil && drain.Err() != nil
	if late {
		p.log.Warn("drain deadline passed; closing what is left")
	}
	p.streams.closeAll(false)
	for _, l := range lns {
		// fasthttp closed the listeners it knew of; this also stops one
		// whose Serve had not begun when ctx ended.
		l.Close()
		l.closeAll()
	}
	p.sockets.wait(drain)
	for _, l := range lns {
		l.wait(drain)
	}
	if late {
		srv.ShutdownWithContext(context.Background())
	}
}

// fasthttpLogger sends fasthttp's own messages to slog at Debug: they are
// about broken clients, and may quote their bytes.
type fasthttpLogger struct{ log *slog.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug("fasthttp", "msg", fmt.Sprintf(format, args...))
	}
}

// peerAddr is the direct peer's IP address.
func peerAddr(ctx *fasthttp.RequestCtx) netip.Addr {
	if a, ok := ctx.RemoteAddr().(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			return ip.Unmap()
		}
	}
	return netip.IPv4Unspecified()
}

// trustedProxy reports whether peer is a configured proxy, whose forwarded
// and identity headers count.
func (p *Proxy) trustedProxy(peer netip.Addr) bool {
	for _, pre := range p.opts.TrustedProxies {
		if pre.Contains(peer) {
			return true
		}
	}
	return false
}

// isNode reports whether a is a node's address (Peers).
func (p *Proxy) isNode(a netip.Addr) bool {
	return p.opts.Peers != nil && p.opts.Peers.IsNodeIP(a.String())
}

// Draining reports whether shutdown has begun.
func (p *Proxy) Draining() bool { return p.draining.Load() }
