package authapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/defaults"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// Defaults used by New for zero Options fields.
const (
	DefaultClaimPrefix          = "dsh-"
	DefaultWarmPool             = "dsh-pool"
	DefaultSigningSecret        = "sandgate-authapi-signing-keys"
	DefaultIssuer               = "sandgate-authapi"
	DefaultAudience             = "sandgate"
	DefaultInternalAudience     = "sandgate-authapi"
	DefaultCookieName           = "dsh_gw_session"
	DefaultSessionTTL           = 10 * time.Minute
	DefaultCookieMaxAge         = 7 * 24 * time.Hour
	DefaultKeyRotationInterval  = 24 * time.Hour
	DefaultKeyPublishDelay      = 10 * time.Minute
	DefaultWakeTimeout          = 60 * time.Second
	DefaultKeepAwake            = time.Hour
	DefaultRateWindow           = 60 * time.Second
	DefaultMaxBodyBytes         = 1 << 20
	DefaultTokenReviewCacheTTL  = 10 * time.Second
	DefaultOriginCookieName     = "sandgate_origin"
	DefaultEntryCodeTTL         = 60 * time.Second
	DefaultSignupBudget         = 60
	DefaultInternalReviewLimit  = 10
	DefaultInternalReviewBudget = 60
	// DefaultAdminGroupsHeader is where oauth2-proxy passes the user's
	// groups (--pass-user-headers).
	DefaultAdminGroupsHeader = "X-Forwarded-Groups"
)

// securePrefix is the cookie-name prefix browsers bind to a secure,
// host-only, Path=/ cookie.
const securePrefix = "__Host-"

// Options configures a Server. main fills it from flags and the environment;
// New fills zero values with the defaults above.
type Options struct {
	// Logger receives JSON logs; nil discards them.
	Logger *slog.Logger
	// Audit receives one JSON line per account action (docs/audit.md),
	// whatever Logger's level; nil sends them to Logger.
	Audit *slog.Logger
	// Replica names this replica (its pod) in audit events.
	Replica string
	// Metrics receives measurements; nil creates unregistered collectors.
	Metrics *Metrics
	// Kube reaches Secrets (signing keys) and TokenReviews. Required.
	Kube kubernetes.Interface
	// Sandboxes reaches SandboxClaims and Sandboxes. Required.
	Sandboxes *sandboxapi.Client
	// Namespace holds the claims and the signing Secret. Required.
	Namespace string
	// ClaimPrefix names a user's claim `<ClaimPrefix><user>`.
	ClaimPrefix string
	// WarmPool is the SandboxWarmPool new claims adopt from.
	WarmPool string
	// SigningSecret is the Secret that holds the signing keys.
	SigningSecret string
	// Issuer and Audience are the session tokens' iss and aud.
	Issuer, Audience string
	// SessionTTL is one session token's lifetime; renewal extends a session
	// up to CookieMaxAge.
	SessionTTL time.Duration
	// CookieName overrides the session cookie name; empty means
	// dsh_gw_session, or __Host-dsh_gw_session when CookieSecure.
	CookieName string
	// CookieSecure sets the Secure attribute (and the __Host- prefix).
	CookieSecure bool
	// CookieMaxAge is how long a session lasts from login.
	CookieMaxAge time.Duration
	// KeyRotationInterval is how often a new signing key is staged.
	KeyRotationInterval time.Duration
	// KeyPublishDelay is how long a staged key is published before it signs;
	// it must exceed the node proxies' JWKS refresh interval.
	KeyPublishDelay time.Duration
	// WakeTimeout bounds how long signup and recreate wait for Ready.
	WakeTimeout time.Duration
	// KeepAwake is how long the account page's "keep awake" holds the
	// idle rule off, from the moment it is pressed.
	KeepAwake time.Duration
	// RateLimit is how many signup and login requests one client may make
	// per RateWindow; zero disables the limit.
	RateLimit  int
	RateWindow time.Duration
	// SignupBudget is how many signups all clients together may start per
	// minute, on top of RateLimit per client.
	SignupBudget int
	// TrustedProxies are the peers (node proxies, an ingress) that
	// X-Forwarded-For is walked through from the right: the first entry
	// outside them names the client.
	TrustedProxies []netip.Prefix
	// InviteCode, when set, must accompany every signup.
	InviteCode string
	// MaxBodyBytes bounds request bodies.
	MaxBodyBytes int64
	// AuthProxyHeader, when set, names the header an SSO proxy asserts the
	// user in; it is trusted only when set.
	AuthProxyHeader string
	// InternalAudience is the audience internal callers' ServiceAccount
	// tokens must be bound to.
	InternalAudience string
	// AllowedServiceAccounts are the usernames
	// (system:serviceaccount:<ns>:<name>) allowed to call internal routes.
	AllowedServiceAccounts []string
	// TokenReviewCacheTTL is how long a TokenReview result is reused.
	TokenReviewCacheTTL time.Duration
	// InternalReviewLimit is how many TokenReviews of tokens not yet
	// known good one client may cause per minute; InternalReviewBudget is
	// that number for all clients together. Past them internal calls get
	// 429 without a review; tokens that passed a review are exempt.
	InternalReviewLimit  int
	InternalReviewBudget int
	// Activity takes node proxies' activity reports on
	// POST /internal/v1/activity (the sweeper); nil leaves the route out.
	Activity Activity
	// ForwardClient passes activity reports on to the leader; nil builds
	// one.
	ForwardClient *http.Client
	// RoutingMode is path (agents under /u/<user>/ on this host) or
	// subdomain (each agent on its own origin under UserDomain); empty
	// means path.
	RoutingMode userorigin.Mode
	// UserDomain is the parent domain of the user origins in subdomain
	// routing: <user>.<UserDomain>.
	UserDomain string
	// OriginCookieName overrides the user origins' session cookie name;
	// empty means sandgate_origin, __Host- prefixed when CookieSecure.
	OriginCookieName string
	// EntryCodeTTL is how long an entry code may wait to be redeemed.
	EntryCodeTTL time.Duration
	// Admins are the accounts that may use the admin page and API.
	Admins []string
	// AdminGroups are SSO groups whose members are admins: with
	// AuthProxyHeader set, a request whose asserted user is the signed-in
	// account and whose AdminGroupsHeader lists one of them.
	AdminGroups []string
	// AdminGroupsHeader is where the SSO proxy lists the user's groups
	// (comma-separated); empty means DefaultAdminGroupsHeader.
	AdminGroupsHeader string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Validate reports every problem with o at once and changes nothing. Zero
// values that New fills are accepted.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("authapi: "+format, args...)) }
	if o.Kube == nil {
		bad("kube client is required")
	}
	if o.Sandboxes == nil {
		bad("sandbox client is required")
	}
	if o.Namespace == "" {
		bad("namespace is required")
	}
	if o.ClaimPrefix != "" {
		if err := account.CheckClaimPrefix(o.ClaimPrefix); err != nil {
			bad("%v", err)
		}
	}
	for name, d := range map[string]time.Duration{
		"session TTL": o.SessionTTL, "cookie max age": o.CookieMaxAge, "key rotation interval": o.KeyRotationInterval,
		"key publish delay": o.KeyPublishDelay, "wake timeout": o.WakeTimeout, "rate window": o.RateWindow, "keep awake": o.KeepAwake,
		"token review cache TTL": o.TokenReviewCacheTTL,
	} {
		if d < 0 {
			bad("%s %v is negative", name, d)
		}
	}
	for name, n := range map[string]int{
		"rate limit": o.RateLimit, "signup budget": o.SignupBudget,
		"internal review limit": o.InternalReviewLimit, "internal review budget": o.InternalReviewBudget,
	} {
		if n < 0 {
			bad("%s %d is negative", name, n)
		}
	}
	if o.MaxBodyBytes < 0 {
		bad("max body bytes %d is negative", o.MaxBodyBytes)
	}
	if o.CookieName != "" && !validCookieName(o.CookieName) {
		bad("cookie name %q is not a valid cookie token", o.CookieName)
	}
	if o.OriginCookieName != "" && (!validCookieName(o.OriginCookieName) || o.OriginCookieName == o.CookieName) {
		bad("origin cookie name %q is not a valid cookie token distinct from the session cookie's", o.OriginCookieName)
	}
	if _, err := userorigin.Check("", string(o.RoutingMode), "", o.UserDomain); err != nil {
		bad("%v", err)
	}
	if o.EntryCodeTTL < 0 {
		bad("entry code TTL %v is negative", o.EntryCodeTTL)
	}
	for _, a := range o.Admins {
		if err := account.ValidateUser(a); err != nil {
			bad("admin %q: %v", a, err)
		}
	}
	if len(o.AdminGroups) > 0 && o.AuthProxyHeader == "" {
		bad("admin groups need the SSO proxy's user header (AuthProxyHeader): groups are only believed beside the user it asserts")
	}
	if h := o.AdminGroupsHeader; h != "" && !validCookieName(h) {
		bad("admin groups header %q is not a header name", h)
	}
	return errors.Join(errs...)
}

// withDefaults returns o with zero values filled.
func (o Options) withDefaults() Options {
	defaults.Set(&o.Logger, slog.New(slog.DiscardHandler))
	defaults.Set(&o.Metrics, NewMetrics(nil))
	defaults.Set(&o.ClaimPrefix, DefaultClaimPrefix)
	defaults.Set(&o.WarmPool, DefaultWarmPool)
	defaults.Set(&o.SigningSecret, DefaultSigningSecret)
	defaults.Set(&o.Issuer, DefaultIssuer)
	defaults.Set(&o.Audience, DefaultAudience)
	defaults.Set(&o.InternalAudience, DefaultInternalAudience)
	defaults.Set(&o.CookieName, o.defaultCookieName(DefaultCookieName))
	defaults.Set(&o.OriginCookieName, o.defaultCookieName(DefaultOriginCookieName))
	defaults.Set(&o.RoutingMode, userorigin.Path)
	defaults.Set(&o.EntryCodeTTL, DefaultEntryCodeTTL)
	defaults.Set(&o.SessionTTL, DefaultSessionTTL)
	defaults.Set(&o.CookieMaxAge, DefaultCookieMaxAge)
	defaults.Set(&o.KeyRotationInterval, DefaultKeyRotationInterval)
	defaults.Set(&o.KeyPublishDelay, DefaultKeyPublishDelay)
	defaults.Set(&o.WakeTimeout, DefaultWakeTimeout)
	defaults.Set(&o.KeepAwake, DefaultKeepAwake)
	defaults.Set(&o.RateWindow, DefaultRateWindow)
	defaults.Set(&o.TokenReviewCacheTTL, DefaultTokenReviewCacheTTL)
	defaults.Set(&o.MaxBodyBytes, DefaultMaxBodyBytes)
	defaults.Set(&o.SignupBudget, DefaultSignupBudget)
	defaults.Set(&o.InternalReviewLimit, DefaultInternalReviewLimit)
	defaults.Set(&o.InternalReviewBudget, DefaultInternalReviewBudget)
	defaults.Set(&o.AdminGroupsHeader, DefaultAdminGroupsHeader)
	if o.ForwardClient == nil {
		o.ForwardClient = &http.Client{Timeout: forwardTimeout, Transport: &http.Transport{
			Proxy: nil, MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute, ResponseHeaderTimeout: forwardTimeout,
		}}
	}
	defaults.Clock(&o.Now)
	return o
}

// defaultCookieName is name with the __Host- prefix when cookies are
// Secure.
func (o Options) defaultCookieName(name string) string {
	if o.CookieSecure {
		return securePrefix + name
	}
	return name
}

// validCookieName reports whether name is an RFC 6265 token.
func validCookieName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c >= 0x7f {
			return false
		}
		switch c {
		case '(', ')', '<', '>', '@', ',', ';', ':', '\\', '"', '/', '[', ']', '?', '=', '{', '}':
			return false
		}
	}
	return name != ""
}
