package nodeproxy

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/defaults"
	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// Defaults that New applies to zero Options fields.
const (
	DefaultCookieName         = "dsh_gw_session"
	DefaultSecureCookieName   = securePrefix + DefaultCookieName
	DefaultCookieMaxAge       = 7 * 24 * time.Hour
	DefaultMaxBodyBytes       = 64 << 20
	DefaultMaxInFlightPerUser = 32
	DefaultWSMaxMessageBytes  = 16 << 20
	DefaultBufferBodyBytes    = 1 << 20
	DefaultMaxHeaderBytes     = 16 << 10
	DefaultHeaderTimeout      = 10 * time.Second
	DefaultBodyTimeout        = 5 * time.Minute
	DefaultWriteTimeout       = 60 * time.Second
	DefaultIdleTimeout        = 90 * time.Second
	DefaultUpstreamIdle       = 5 * time.Minute
	DefaultDialTimeout        = 5 * time.Second
	DefaultRenewTimeout       = 3 * time.Second
	DefaultDrainTimeout       = 25 * time.Second
	DefaultRetryAfter         = 2 * time.Second
	DefaultRenewPath          = "/internal/v1/sessions/renew"
	DefaultWakePath           = "/internal/v1/wake"
	DefaultRedeemPath         = "/internal/v1/origin/redeem"
	DefaultOriginCookieName   = "sandgate_origin"
	DefaultWakeTimeout        = 60 * time.Second
)

// Waiter holds a request until its sandbox is Ready on a node other than
// away ("": any), woken by informer events. *informer.Index implements it.
type Waiter interface {
	WaitReady(ctx context.Context, user, away string) (informer.Entry, error)
}

// Directory resolves a user to the account and route the informer caches
// hold; it never calls the API server. *informer.Index implements it, and
// AccountWatcher too, which open WebSockets and streams need to end when
// their session does.
type Directory interface {
	Lookup(user string) (informer.Entry, error)
}

// Verifier checks session tokens offline. *jwt.Verifier implements it.
type Verifier interface {
	Verify(token string) (jwt.Claims, error)
	VerifyIgnoringExpiry(token string) (jwt.Claims, error)
}

// Handshaker yields the cookie the agent app expects from a pod on this
// node. *handshake.Handshaker implements it.
type Handshaker interface {
	Cookie(ctx context.Context, t handshake.Target) (string, error)
	Refresh(ctx context.Context, t handshake.Target, stale string) (string, error)
}

// Peers tells whether an address is another node's, so a hop from that
// node's proxy may carry the client's forwarded headers.
type Peers interface {
	IsNodeIP(ip string) bool
}

// ReadyCheck is one condition /readyz requires.
type ReadyCheck struct {
	Name  string
	Ready func() bool
}

// Options configures a Proxy. main fills it from flags and the environment;
// New fills zero values with the defaults above.
type Options struct {
	// NodeName is this node; routes to other nodes hop to their proxy.
	NodeName string

	// Directory, Verifier and Handshaker are the stages' collaborators.
	// Required.
	Directory  Directory
	Verifier   Verifier
	Handshaker Handshaker
	// Peers recognises other nodes' proxies; nil trusts no hop's
	// forwarded headers beyond TrustedProxies.
	Peers Peers
	// ReadyChecks must all pass for /readyz (informers synced, JWKS
	// loaded).
	ReadyChecks []ReadyCheck

	// AuthAPI is the auth API's base URL (http or https); every path
	// outside /u/ is forwarded there. Required.
	AuthAPI string
	// AuthAPIInternal is the base URL of the auth API's listener for its
	// /internal/ endpoints (renewal, wake, entry-code redemption), which
	// its public listener may not serve; empty means AuthAPI.
	AuthAPIInternal string
	// RenewPath is the auth API's session renewal endpoint.
	RenewPath string
	// ServiceAccountToken returns this proxy's projected token for the
	// auth API's internal endpoints; nil sends none.
	ServiceAccountToken func() (string, error)

	// Waiter enables wake-on-connect: a request for a Suspended or
	// not-Ready sandbox asks the auth API (WakePath) to wake it and is held
	// until Ready, up to WakeTimeout. Nil answers such requests 503 at once.
	Waiter      Waiter
	WakePath    string
	WakeTimeout time.Duration
	// Activity, when set, records every proxied request, body chunk and
	// WebSocket data frame per sandbox for idle suspend.
	Activity *activity.Tracker
	// Namespace is the Sandboxes' namespace, the Activity keys' namespace.
	Namespace string

	// CookieName is the session cookie (COOKIE_NAME); empty means
	// dsh_gw_session, or __Host-dsh_gw_session with CookieSecure.
	CookieName   string
	CookieSecure bool
	// CookieMaxAge is how long a session lasts from login; an expired
	// token older than that is not renewed.
	CookieMaxAge time.Duration

	// RoutingMode is path (agents under /u/<user>/) or subdomain (the
	// agent of <user> on the Host <user>.<UserDomain>, everything else
	// on other hosts to the auth API); empty means path.
	RoutingMode userorigin.Mode
	UserDomain  string
	// PublicOrigin is the main origin (scheme://host[:port]) a browser is
	// sent to when it reaches a user origin without an origin session.
	// Required in subdomain routing.
	PublicOrigin string
	// OriginVerifier checks origin sessions offline (their own audience).
	// Required in subdomain routing.
	OriginVerifier Verifier
	// OriginCookieName is the user origins' host-only session cookie;
	// empty means sandgate_origin, __Host- prefixed with CookieSecure.
	OriginCookieName string
	// EntryVerifier checks entry codes offline (their own audience), so a
	// forged, expired or misdirected code is refused without a call to
	// the auth API. Required in subdomain routing.
	EntryVerifier Verifier
	// RedeemPath is the auth API's entry code endpoint.
	RedeemPath string
	// ActivityPath is the auth API's activity report endpoint, which
	// ActivitySender posts to.
	ActivityPath string

	// AuthProxyHeader is the header the auth API takes an SSO proxy's
	// user from (its AUTH_PROXY_HEADER), when set: like every identity
	// header it is removed from requests of peers outside
	// TrustedProxies (or, with AuthProxySecret, from requests without
	// the proof) and never reaches an app.
	AuthProxyHeader string

	// AuthProxySecret, when set, is the password the SSO proxy proves on
	// every request: "Authorization: Basic base64(<user>:<secret>)",
	// <user> equal to its AuthProxyHeader (oauth2-proxy's
	// --pass-basic-auth with --basic-auth-password). The identity
	// headers are then kept only on a request with that proof, whatever
	// its peer's address; the proof (every Authorization but a bearer
	// token) never goes upstream. At least MinAuthProxySecretBytes;
	// needs AuthProxyHeader.
	AuthProxySecret []byte

	// HopKey, shared by every node proxy, authenticates hops: a hop sent
	// carries an HMAC proof made with it, and a hop received has its
	// forwarded headers trusted only when its proof verifies. At least
	// MinHopKeyBytes. Nil trusts a hop by its source address (Peers).
	HopKey []byte

	// PeerPort is the port other nodes' proxies listen on.
	PeerPort int
	// TrustedProxies are peers (an ingress, a TLS terminator) whose
	// X-Forwarded-For/Proto/Host are kept and extended.
	TrustedProxies []netip.Prefix

	// MaxBodyBytes bounds request bodies (MAX_BODY_MB); 413 past it.
	MaxBodyBytes int64
	// BufferBodyBytes: bodies up to this size are read whole before the
	// upstream sees the request, so an aborted upload never reaches it and
	// a 401 from the app can be retried; larger bodies stream.
	BufferBodyBytes int
	// MaxInFlightPerUser caps one user's concurrent requests and
	// WebSockets (MAX_IN_FLIGHT_PER_USER).
	MaxInFlightPerUser int
	// WSMaxMessageBytes caps a WebSocket message (WS_MAX_MESSAGE_BYTES).
	WSMaxMessageBytes int64
	// HeaderAllowlist, when set, lists the only client request headers
	// sent upstream (UPSTREAM_HEADER_ALLOWLIST); otherwise a denylist
	// applies. Credentials and hop-by-hop headers never pass.
	HeaderAllowlist []string
	// MaxHeaderBytes caps a request's header block (431 past it).
	MaxHeaderBytes int

	// HeaderTimeout bounds reading a request's headers; BodyTimeout its
	// body; WriteTimeout each write to a client (a stalled reader is
	// dropped); IdleTimeout a keep-alive connection between requests.
	HeaderTimeout time.Duration
	BodyTimeout   time.Duration
	WriteTimeout  time.Duration
	IdleTimeout   time.Duration
	// UpstreamIdleTimeout bounds how long an upstream may send nothing
	// while a response is awaited or streamed (not on WebSockets).
	UpstreamIdleTimeout time.Duration
	// DialTimeout bounds connecting to a pod, a peer or the auth API.
	DialTimeout time.Duration
	// RenewTimeout bounds one renewal call.
	RenewTimeout time.Duration
	// DrainTimeout bounds the graceful shutdown.
	DrainTimeout time.Duration
	// RetryAfter is sent with 503 responses.
	RetryAfter time.Duration

	// Dial connects to upstreams; nil dials TCP. Tests pass in-memory
	// listeners' dialers.
	Dial fasthttp.DialFunc
	// Logger receives JSON logs; the access log goes to it with
	// component=access. Nil discards them.
	Logger *slog.Logger
	// AccessLogSummary, when positive, keeps plain successes (2xx, no
	// error, renewal, retry, wake hold or abort; not WebSockets) out of
	// the access log and writes instead, this often, one line per user
	// and route with their count, bytes and longest duration. Every other
	// request keeps its own line. Zero writes a line for every request.
	AccessLogSummary time.Duration
	// Registerer receives the metrics; Gatherer serves them on /metrics.
	Registerer prometheus.Registerer
	Gatherer   prometheus.Gatherer
	// JWKSRefreshed returns when the verifier's key set was last fetched
	// (zero before the first), for the JWKS staleness gauge; nil reports 0.
	JWKSRefreshed func() time.Time
	// JWKSPublished is told the JWKS version the auth API names in each
	// answer to an activity report (activity.JWKSVersionHeader), so the
	// verifier's key set follows a key reset within a report interval;
	// nil ignores it.
	JWKSPublished func(version string)
	// KeySetsReplaced counts the times the verifier's key set was
	// replaced entirely (a signing key reset; jwt.JWKSFetcher.Replaced).
	// An open WebSocket or stream of a session cookie verified under an
	// older count ends; call Proxy.KeysReplaced when it grows. Nil counts 0.
	KeySetsReplaced func() uint64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// afterFunc starts the timers of open connections' sessions (their
	// maximum age); nil means time.AfterFunc. Tests replace it.
	afterFunc func(d time.Duration, f func()) (stop func() bool)
}

func (o Options) withDefaults() Options {
	defaults.Set(&o.CookieName, o.cookieName(DefaultCookieName))
	defaults.Set(&o.OriginCookieName, o.cookieName(DefaultOriginCookieName))
	defaults.Set(&o.RoutingMode, userorigin.Path)
	o.PublicOrigin = strings.TrimSuffix(o.PublicOrigin, "/")
	defaults.Set(&o.AuthAPIInternal, o.AuthAPI)
	defaults.Set(&o.RedeemPath, DefaultRedeemPath)
	defaults.Set(&o.ActivityPath, DefaultActivityPath)
	defaults.Set(&o.RenewPath, DefaultRenewPath)
	defaults.Set(&o.WakePath, DefaultWakePath)
	defaults.Set(&o.WakeTimeout, DefaultWakeTimeout)
	defaults.Set(&o.CookieMaxAge, DefaultCookieMaxAge)
	defaults.Set(&o.MaxBodyBytes, DefaultMaxBodyBytes)
	defaults.Set(&o.WSMaxMessageBytes, DefaultWSMaxMessageBytes)
	defaults.Set(&o.BufferBodyBytes, DefaultBufferBodyBytes)
	defaults.Set(&o.MaxInFlightPerUser, DefaultMaxInFlightPerUser)
	defaults.Set(&o.MaxHeaderBytes, DefaultMaxHeaderBytes)
	defaults.Set(&o.HeaderTimeout, DefaultHeaderTimeout)
	defaults.Set(&o.BodyTimeout, DefaultBodyTimeout)
	defaults.Set(&o.WriteTimeout, DefaultWriteTimeout)
	defaults.Set(&o.IdleTimeout, DefaultIdleTimeout)
	defaults.Set(&o.UpstreamIdleTimeout, DefaultUpstreamIdle)
	defaults.Set(&o.DialTimeout, DefaultDialTimeout)
	defaults.Set(&o.RenewTimeout, DefaultRenewTimeout)
	defaults.Set(&o.DrainTimeout, DefaultDrainTimeout)
	defaults.Set(&o.RetryAfter, DefaultRetryAfter)
	defaults.Set(&o.Logger, slog.New(slog.DiscardHandler))
	defaults.Clock(&o.Now)
	if o.KeySetsReplaced == nil {
		o.KeySetsReplaced = func() uint64 { return 0 }
	}
	if o.afterFunc == nil {
		o.afterFunc = afterFunc
	}
	return o
}

// securePrefix makes a cookie host-only and Secure, so no sibling or
// parent origin can set it.
const securePrefix = "__Host-"

// cookieName is name with securePrefix when cookies are Secure.
func (o Options) cookieName(name string) string {
	if o.CookieSecure {
		return securePrefix + name
	}
	return name
}

// validToken reports whether s is an RFC 9110 token (header or cookie
// name).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?={}`, c) >= 0 {
			return false
		}
	}
	return true
}
