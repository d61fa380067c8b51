package nodeproxy

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/deadlineconn"
)

// Proxy is the node proxy. Build it with New, run it with Serve. It is
// safe for concurrent use. It holds the stages serve runs, each built once
// with its own settings, and what the server and its shutdown need.
type Proxy struct {
	opts   Options
	log    *slog.Logger
	access *slog.Logger
	// successes stands for plain successes in the access log; nil when
	// every request gets its own line.
	successes *successes
	m         *metrics
	net       network
	inflight  *inFlight
	activity  tracker
	authAPI   *authClient      // renewal, redemption, wake, activity reports
	client    *fasthttp.Client // pods, peers and the auth API
	sockets   *wsRegistry
	streams   *streamRegistry
	watch     *watcher
	draining  atomic.Bool

	guard    *guard
	sessions *sessions
	waker    *waker
	forward  *forwarder
	answers  *answers
}

// hopHeader marks a request forwarded by another node's proxy; its value
// is the sending node. Anyone can send it, so on its own it only ever
// restricts: a request carrying it is never forwarded again (the loop
// guard) and never renews a session. Its forwarded headers are trusted
// when its proof (hopAuthHeader) verifies with the hop key, or, without a
// hop key, when the peer is a node (Peers).
const hopHeader = "X-Sandgate-Hop"

// movedHeader marks a node proxy's 503 to a hop whose sandbox it found
// Ready on another node: a wake raced a suspend and the new pod started
// elsewhere. The sending proxy then sends a request without a body once
// more, where its own caches see the sandbox. Apps cannot send it
// (ownPrefix).
const movedHeader = "X-Sandgate-Moved"

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
	log := o.Logger.With("component", "nodeproxy")
	p := &Proxy{
		opts:      o,
		log:       log,
		access:    o.Logger.With("component", "access"),
		successes: newSuccessesIf(o.AccessLogSummary > 0),
		m:         m,
		net:       network{proxies: o.TrustedProxies, peers: o.Peers},
		inflight:  newInFlight(o.MaxInFlightPerUser),
		activity:  tracker{table: o.Activity, namespace: o.Namespace},
		sockets:   new(wsRegistry),
		streams:   streams,
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
	var hops *hopAuth
	if o.HopKey != nil {
		hops = newHopAuth(o.HopKey, o.Now, hopNonces)
	}
	rules := sessionRuleSet{cookie: o.CookieName, originCookie: o.OriginCookieName, verifier: o.Verifier, originVerifier: o.OriginVerifier}
	age := sessionAge{max: o.CookieMaxAge}
	p.authAPI = newAuthClient(o, m, p.dialNet)
	p.watch = &watcher{directory: o.Directory, keySets: o.KeySetsReplaced, now: o.Now, age: age, afterFunc: o.afterFunc, m: m, log: log}
	p.watch.accounts, _ = o.Directory.(AccountWatcher)
	if p.watch.accounts == nil {
		log.Warn("the directory reports no account changes: open WebSockets and streams end at their session's maximum age only")
	}

	p.guard = &guard{
		routing: o.RoutingMode, userDomain: o.UserDomain, cookieSecure: o.CookieSecure,
		net: p.net, nodeName: o.NodeName, hopAuth: hops,
		authProxySecret: o.AuthProxySecret, authProxyHeader: strings.ToLower(o.AuthProxyHeader),
		m: m, log: log,
	}
	p.sessions = &sessions{
		directory: o.Directory, now: o.Now, rules: rules, age: age, keySets: o.KeySetsReplaced,
		entryVerifier: o.EntryVerifier, cookieSecure: o.CookieSecure, publicOrigin: o.PublicOrigin,
		stateCookie: o.cookieName(entryStateName),
		renewer:     newRenewer(o, m, p.authAPI),
		entries:     newFailLimiter(refusalBurst, refusalEvery, o.Now),
		unknown:     newFailLimiter(refusalBurst, refusalEvery, o.Now),
		watch:       p.watch, m: m, log: log,
	}
	p.waker = newWaker(o, p.authAPI, m, log)
	p.answers = &answers{
		publicOrigin: o.PublicOrigin, retryAfter: o.RetryAfter, wakeTimeout: o.WakeTimeout, now: o.Now,
		directory: o.Directory, sessions: rules, waker: p.waker,
		// checkOrigin has refused a foreign Origin before the upstream
		// was dialled; the library's own check would come only after.
		upgrader: websocket.FastHTTPUpgrader{
			CheckOrigin:      func(*fasthttp.RequestCtx) bool { return true },
			HandshakeTimeout: o.HeaderTimeout,
			ReadBufferSize:   wsReadBuffer,
			WriteBufferSize:  4 << 10,
			WriteBufferPool:  wsWriteBuffers,
		},
		upgradeTimeout: o.WriteTimeout + o.HeaderTimeout,
		inflight:       p.inflight, activity: p.activity, m: m, access: p.access, successes: p.successes,
	}
	p.forward = &forwarder{
		maxBodyBytes: o.MaxBodyBytes, bufferBodyBytes: o.BufferBodyBytes,
		headerTimeout: o.HeaderTimeout, dialTimeout: o.DialTimeout, writeTimeout: o.WriteTimeout,
		wsMaxMessageBytes: o.WSMaxMessageBytes, peerPort: o.PeerPort,
		publicOrigin: o.PublicOrigin, mainHost: hostOf(o.PublicOrigin), nodeName: o.NodeName, hopAuth: hops,
		handshaker: o.Handshaker, sessions: rules,
		m: m, rules: newHeaderRules(o.HeaderAllowlist, o.AuthProxyHeader), client: p.client,
		uploads: newUploads(p.client, o.Now),
		dialer: &websocket.Dialer{
			NetDialContext:   p.dialWS,
			HandshakeTimeout: o.DialTimeout + o.HeaderTimeout,
			ReadBufferSize:   wsReadBuffer,
			WriteBufferSize:  4 << 10,
			WriteBufferPool:  wsWriteBuffers,
		},
		authAPI: p.authAPI, bodies: p.inflight.bodies, activity: p.activity, watch: p.watch,
		sockets: p.sockets, streams: p.streams, draining: &p.draining, end: p.answers,
	}
	return p, nil
}

// wsWriteBuffers are the write buffers of bridged WebSockets, held only
// while a side writes: most sockets are idle, and 10,000 of them would
// otherwise pin 80 MB. Their read buffers are held for their life, so
// they are small (wsReadBuffer).
var wsWriteBuffers = &sync.Pool{}

// hostOf is origin's host[:port], or "" when it is not a URL.
func hostOf(origin string) string {
	u, err := url.Parse(origin)
	if err != nil {
		return ""
	}
	return u.Host
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

// ActivitySender is the proxy's auth API client as the activity reporter's
// Sender: reports go to ActivityPath on AuthAPIInternal with the
// ServiceAccount token.
func (p *Proxy) ActivitySender() activity.Sender { return p.authAPI }

// KeysReplaced checks every open WebSocket's and stream's session again
// once Options.KeySetsReplaced has grown, so those of session cookies
// verified with the replaced keys end (with 4401) within the node proxy's
// JWKS fetch of a signing key reset; the verifier's key source calls it
// (jwt.FetcherOptions.OnReplaced).
func (p *Proxy) KeysReplaced() { p.watch.checkAll() }
