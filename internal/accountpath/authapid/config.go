package authapid

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/accountpath/authapi"
	"github.com/sandgate/sandgate/internal/accountpath/sweeper"
	"github.com/sandgate/sandgate/internal/settings"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// Config is every setting of `authapi`, as the environment and flags give
// it. Durations accept Go syntax ("90s", "10m") or bare seconds, as the
// seed's variables are written.
type Config struct {
	ListenAddr, InternalAddr, OpsAddr string
	Kubeconfig                        string
	Namespace, ClaimPrefix, WarmPool  string
	SigningSecret, Issuer, Audience   string
	SessionTTL, CookieMaxAge          time.Duration
	KeyRotationInterval               time.Duration
	KeyPublishDelay, WakeTimeout      time.Duration
	CookieName                        string
	CookieSecure, AllowInsecure       bool
	RateLimit                         int
	RateWindow                        time.Duration
	TrustedProxies                    string
	InviteCode, InviteCodeFile        string
	MaxBodyMB                         int
	AuthProxyHeader                   string
	InternalAudience                  string
	AllowedServiceAccounts            string
	TokenReviewCacheTTL               time.Duration
	SignupBudget                      int
	InternalReviewLimit               int
	InternalReviewBudget              int
	ShutdownTimeout                   time.Duration
	DrainDelay                        time.Duration
	LogLevel                          string
	IdleTimeout, ReportInterval       time.Duration
	IdleCountsOpenConnections         bool
	BusyAllowance, KeepAwake          time.Duration
	LeaseDuration, RenewDeadline      time.Duration
	RoutingMode, UserDomain           string
	OriginCookieName                  string
	EntryCodeTTL                      time.Duration
	RetryPeriod                       time.Duration
	PodName, PodIP                    string
	Admins, AdminGroups               string
	AdminGroupsHeader                 string

	problems []error // values the environment or flags could not parse
}

// Defaults are the seed's defaults where the seed has the setting.
func Defaults() Config {
	return Config{
		ListenAddr: ":8080", OpsAddr: ":9090",
		Namespace: "dsh-demo", ClaimPrefix: authapi.DefaultClaimPrefix, WarmPool: authapi.DefaultWarmPool,
		SigningSecret: authapi.DefaultSigningSecret, Issuer: authapi.DefaultIssuer, Audience: authapi.DefaultAudience,
		SessionTTL: authapi.DefaultSessionTTL, CookieMaxAge: authapi.DefaultCookieMaxAge,
		KeyRotationInterval: authapi.DefaultKeyRotationInterval, KeyPublishDelay: authapi.DefaultKeyPublishDelay,
		WakeTimeout: authapi.DefaultWakeTimeout, CookieSecure: true,
		RateLimit: 30, RateWindow: authapi.DefaultRateWindow, MaxBodyMB: 1,
		InternalAudience:       authapi.DefaultInternalAudience,
		AllowedServiceAccounts: "system:serviceaccount:sandgate-node:nodeproxy",
		TokenReviewCacheTTL:    authapi.DefaultTokenReviewCacheTTL,
		AdminGroupsHeader:      authapi.DefaultAdminGroupsHeader,
		SignupBudget:           authapi.DefaultSignupBudget, InternalReviewLimit: authapi.DefaultInternalReviewLimit, InternalReviewBudget: authapi.DefaultInternalReviewBudget,
		ShutdownTimeout: 20 * time.Second, DrainDelay: 10 * time.Second, LogLevel: "info",
		IdleTimeout: sweeper.DefaultIdleTimeout, ReportInterval: sweeper.DefaultReportInterval,
		BusyAllowance: sweeper.DefaultBusyAllowance, KeepAwake: authapi.DefaultKeepAwake,
		EntryCodeTTL:  authapi.DefaultEntryCodeTTL,
		LeaseDuration: sweeper.DefaultLeaseDuration, RenewDeadline: sweeper.DefaultRenewDeadline, RetryPeriod: sweeper.DefaultRetryPeriod,
	}
}

// Settings are the flags and environment variables, each bound to its
// field of c.
func (c *Config) Settings() []settings.Setting {
	return []settings.Setting{
		settings.Var("listen-addr", "LISTEN_ADDR", "public listener (landing page, signup, login, JWKS; /internal/ too unless --internal-addr)", settings.String(&c.ListenAddr)),
		settings.Var("internal-addr", "INTERNAL_ADDR", "separate listener for /internal/ routes and the JWKS; empty serves them on --listen-addr", settings.String(&c.InternalAddr)),
		settings.Var("ops-addr", "OPS_ADDR", "listener for /healthz, /readyz and /metrics", settings.String(&c.OpsAddr)),
		settings.Kubeconfig(&c.Kubeconfig),
		settings.Var("namespace", "NAMESPACE", "namespace of the account claims and the signing Secret", settings.String(&c.Namespace)),
		settings.Var("claim-prefix", "CLAIM_PREFIX", "a user's claim is named <prefix><user>", settings.String(&c.ClaimPrefix)),
		settings.Var("warm-pool", "WARM_POOL", "SandboxWarmPool new claims adopt from", settings.String(&c.WarmPool)),
		settings.Var("signing-secret", "SIGNING_SECRET", "Secret holding the signing keys (created or filled on first start)", settings.String(&c.SigningSecret)),
		settings.Var("issuer", "ISSUER", "iss of session tokens", settings.String(&c.Issuer)),
		settings.Var("audience", "AUDIENCE", "aud of session tokens", settings.String(&c.Audience)),
		settings.Var("session-token-ttl", "SESSION_TOKEN_TTL", "lifetime of one session token; node proxies renew it", settings.Duration(&c.SessionTTL)),
		settings.Var("cookie-max-age", "COOKIE_MAX_AGE", "session length from login (seconds or duration)", settings.Duration(&c.CookieMaxAge)),
		settings.Var("key-rotation-interval", "KEY_ROTATION_INTERVAL", "how often a new signing key takes over", settings.Duration(&c.KeyRotationInterval)),
		settings.Var("key-publish-delay", "KEY_PUBLISH_DELAY", "how long a new key is in the JWKS before it signs (> node proxies' JWKS refresh)", settings.Duration(&c.KeyPublishDelay)),
		settings.Var("wake-timeout", "WAKE_TIMEOUT", "how long signup and recreate wait for the sandbox to be Ready", settings.Duration(&c.WakeTimeout)),
		settings.Var("cookie-name", "COOKIE_NAME", "session cookie name; empty means dsh_gw_session, or __Host-dsh_gw_session when secure", settings.String(&c.CookieName)),
		settings.Var("routing-mode", "ROUTING_MODE", "path: agents under /u/<user>/ on this host; subdomain: /u/<user>/ sends the browser to <user>.<USER_DOMAIN> with a single-use entry code", settings.String(&c.RoutingMode)),
		settings.Var("user-domain", "USER_DOMAIN", "parent domain of the user origins in subdomain routing", settings.String(&c.UserDomain)),
		settings.Var("origin-cookie-name", "ORIGIN_COOKIE_NAME", "user origins' host-only session cookie; empty means sandgate_origin, or __Host-sandgate_origin when secure", settings.String(&c.OriginCookieName)),
		settings.Var("entry-code-ttl", "ENTRY_CODE_TTL", "how long a single-use entry code to a user origin stays redeemable", settings.Duration(&c.EntryCodeTTL)),
		settings.Var("cookie-secure", "COOKIE_SECURE", "mark cookies Secure (serve behind TLS)", settings.Bool(&c.CookieSecure)),
		settings.Var("allow-insecure-cookies", "ALLOW_INSECURE_COOKIES", "permit COOKIE_SECURE=false (local plain-HTTP demo only)", settings.Bool(&c.AllowInsecure)),
		settings.Var("auth-rate-limit", "AUTH_RATE_LIMIT", "signup and login requests per client per window; 0 disables", settings.Int(&c.RateLimit)),
		settings.Var("auth-rate-window", "AUTH_RATE_WINDOW", "rate limit window (seconds or duration)", settings.Duration(&c.RateWindow)),
		settings.Var("trusted-proxies", "TRUSTED_PROXIES", "comma-separated CIDRs of proxies X-Forwarded-For is walked through from the right: the first address outside them is the client", settings.String(&c.TrustedProxies)),
		settings.Var("signup-invite-code", "SIGNUP_INVITE_CODE", "invite code every signup must send; empty allows open signup", settings.String(&c.InviteCode)),
		settings.Var("signup-invite-code-file", "SIGNUP_INVITE_CODE_FILE", "file holding the invite code (instead of SIGNUP_INVITE_CODE)", settings.String(&c.InviteCodeFile)),
		settings.Var("max-body-mb", "MAX_BODY_MB", "request body limit in MiB", settings.Int(&c.MaxBodyMB)),
		settings.Var("auth-proxy-header", "AUTH_PROXY_HEADER", "trust this header as the user asserted by an SSO proxy; empty trusts none", settings.String(&c.AuthProxyHeader)),
		settings.Var("internal-audience", "INTERNAL_AUDIENCE", "audience internal callers' ServiceAccount tokens must carry", settings.String(&c.InternalAudience)),
		settings.Var("internal-allowed-service-accounts", "INTERNAL_ALLOWED_SERVICE_ACCOUNTS", "comma-separated ServiceAccount usernames allowed on /internal/", settings.String(&c.AllowedServiceAccounts)),
		settings.Var("token-review-cache-ttl", "TOKEN_REVIEW_CACHE_TTL", "how long a TokenReview result is reused", settings.Duration(&c.TokenReviewCacheTTL)),
		settings.Var("signup-budget", "SIGNUP_BUDGET", "signups all clients together may start per minute (per replica)", settings.Int(&c.SignupBudget)),
		settings.Var("internal-review-limit", "INTERNAL_REVIEW_LIMIT", "TokenReviews of unknown internal tokens one client may cause per minute", settings.Int(&c.InternalReviewLimit)),
		settings.Var("internal-review-budget", "INTERNAL_REVIEW_BUDGET", "TokenReviews of unknown internal tokens all clients together may cause per minute", settings.Int(&c.InternalReviewBudget)),
		settings.Var("shutdown-timeout", "SHUTDOWN_TIMEOUT", "how long shutdown waits for requests in flight", settings.Duration(&c.ShutdownTimeout)),
		settings.Var("drain-delay", "DRAIN_DELAY", "how long \"authapi drain\" (the preStop hook) holds SIGTERM back after /readyz starts failing, for endpoints to stop sending requests", settings.Duration(&c.DrainDelay)),
		settings.Var("log-level", "LOG_LEVEL", "debug, info, warn or error", settings.String(&c.LogLevel)),
		settings.Var("idle-timeout", "IDLE_TIMEOUT", "suspend a managed sandbox after this long without activity or open work", settings.Duration(&c.IdleTimeout)),
		settings.Var("report-interval", "REPORT_INTERVAL", "node proxies' activity report interval (a node silent for 3 counts as idle)", settings.Duration(&c.ReportInterval)),
		settings.Var("idle-counts-open-connections", "IDLE_COUNTS_OPEN_CONNECTIONS", "an open but silent WebSocket keeps its sandbox awake", settings.Bool(&c.IdleCountsOpenConnections)),
		settings.Var("busy-allowance", "BUSY_ALLOWANCE", "per user and UTC day, how long agents' busy declarations may keep a sandbox awake past IDLE_TIMEOUT", settings.Duration(&c.BusyAllowance)),
		settings.Var("keep-awake", "KEEP_AWAKE", "how long the account page's \"keep awake\" holds idle suspend off", settings.Duration(&c.KeepAwake)),
		settings.Var("leader-lease-duration", "LEADER_LEASE_DURATION", "how long the sweeper's leader Lease holds without renewal (whole seconds); a killed leader is replaced after it", settings.Duration(&c.LeaseDuration)),
		settings.Var("leader-renew-deadline", "LEADER_RENEW_DEADLINE", "how long the leader keeps trying to renew before it stops sweeping (< LEADER_LEASE_DURATION)", settings.Duration(&c.RenewDeadline)),
		settings.Var("leader-retry-period", "LEADER_RETRY_PERIOD", "how often replicas try to take or renew the Lease", settings.Duration(&c.RetryPeriod)),
		settings.Var("admins", "ADMINS", "comma-separated account names that may use the admin page (/admin/accounts) and API", settings.String(&c.Admins)),
		settings.Var("admin-groups", "ADMIN_GROUPS", "comma-separated SSO groups whose members are admins (needs AUTH_PROXY_HEADER: believed only beside the user the SSO proxy asserts)", settings.String(&c.AdminGroups)),
		settings.Var("admin-groups-header", "ADMIN_GROUPS_HEADER", "header the SSO proxy lists the user's groups in, comma-separated (oauth2-proxy's with --pass-user-headers)", settings.String(&c.AdminGroupsHeader)),
		settings.Var("pod-name", "POD_NAME", "this replica's pod name, for the sweeper's leader lease; empty uses the host name", settings.String(&c.PodName)),
		settings.Var("pod-ip", "POD_IP", "address where other replicas reach this one's internal listener; empty uses the listener's host or 127.0.0.1", settings.String(&c.PodIP)),
	}
}

// Load starts from Defaults, lets the environment set them and the flags
// override them. Unparsable values are kept as problems for Validate; only
// flag syntax errors (and --help) return an error here.
func Load(args []string, getenv func(string) string, usageOut io.Writer) (Config, error) {
	c := Defaults()
	var err error
	c.problems, err = settings.Load("authapi", c.Settings(), args, getenv, usageOut, func() { usage(usageOut) })
	return c, err
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: authapi [flags]
       authapi jwt inspect [flags] [TOKEN]
       authapi admin [flags] COMMAND [USER]
       authapi drain

sandgate's auth API: accounts as SandboxClaims, JWT session cookies that node
proxies verify offline, the landing page, the admin page and API. Every flag can also be set by the
environment variable in brackets; flags win. Durations take "90s", "10m" or
bare seconds.

`)
	d := Defaults()
	settings.Usage(w, d.Settings())
	fmt.Fprint(w, `
Listeners: --listen-addr serves browsers and API clients; --ops-addr serves
/healthz, /readyz and /metrics; the process refuses to start with
COOKIE_SECURE=false unless ALLOW_INSECURE_COOKIES=1.
`)
}

var saPattern = regexp.MustCompile(`^system:serviceaccount:[a-z0-9]([-a-z0-9]*[a-z0-9])?:[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// Validate reports every problem at once and changes nothing.
func (c Config) Validate() error {
	errs := append([]error(nil), c.problems...)
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !c.CookieSecure && !c.AllowInsecure {
		bad("COOKIE_SECURE=false needs ALLOW_INSECURE_COOKIES=1: insecure cookies are for a local plain-HTTP demo only")
	}
	for name, v := range map[string]string{"LISTEN_ADDR": c.ListenAddr, "OPS_ADDR": c.OpsAddr, "NAMESPACE": c.Namespace,
		"WARM_POOL": c.WarmPool, "SIGNING_SECRET": c.SigningSecret, "ISSUER": c.Issuer, "AUDIENCE": c.Audience, "INTERNAL_AUDIENCE": c.InternalAudience} {
		if v == "" {
			bad("%s must not be empty", name)
		}
	}
	if c.ListenAddr == c.OpsAddr || (c.InternalAddr != "" && (c.InternalAddr == c.ListenAddr || c.InternalAddr == c.OpsAddr)) {
		bad("LISTEN_ADDR, INTERNAL_ADDR and OPS_ADDR must differ")
	}
	if err := account.CheckClaimPrefix(c.ClaimPrefix); err != nil {
		bad("CLAIM_PREFIX: %v", err)
	}
	if c.SessionTTL < time.Minute || c.SessionTTL > time.Hour {
		bad("SESSION_TOKEN_TTL %v must be between 1m and 1h", c.SessionTTL)
	}
	if c.CookieMaxAge < c.SessionTTL {
		bad("COOKIE_MAX_AGE %v must be at least SESSION_TOKEN_TTL %v", c.CookieMaxAge, c.SessionTTL)
	}
	if c.KeyRotationInterval < 2*c.KeyPublishDelay || c.KeyRotationInterval < time.Minute {
		bad("KEY_ROTATION_INTERVAL %v must be at least 1m and twice KEY_PUBLISH_DELAY %v", c.KeyRotationInterval, c.KeyPublishDelay)
	} else if n := authapi.KeyRingSize(c.CookieMaxAge, c.SessionTTL, c.KeyRotationInterval); n > authapi.MaxKeyRing {
		bad("KEY_ROTATION_INTERVAL %v with COOKIE_MAX_AGE %v keeps about %.0f signing keys, more than %d fit: rotate less often", c.KeyRotationInterval, c.CookieMaxAge, n, authapi.MaxKeyRing)
	}
	for name, d := range map[string]time.Duration{"WAKE_TIMEOUT": c.WakeTimeout, "IDLE_TIMEOUT": c.IdleTimeout, "REPORT_INTERVAL": c.ReportInterval, "AUTH_RATE_WINDOW": c.RateWindow,
		"TOKEN_REVIEW_CACHE_TTL": c.TokenReviewCacheTTL, "SHUTDOWN_TIMEOUT": c.ShutdownTimeout, "KEY_PUBLISH_DELAY": c.KeyPublishDelay,
		"BUSY_ALLOWANCE": c.BusyAllowance, "KEEP_AWAKE": c.KeepAwake} {
		if d <= 0 {
			bad("%s %v must be positive", name, d)
		}
	}
	for name, n := range map[string]int{"SIGNUP_BUDGET": c.SignupBudget, "INTERNAL_REVIEW_LIMIT": c.InternalReviewLimit, "INTERNAL_REVIEW_BUDGET": c.InternalReviewBudget} {
		if n < 1 {
			bad("%s %d must be at least 1", name, n)
		}
	}
	if c.DrainDelay < 0 {
		bad("DRAIN_DELAY %v must not be negative", c.DrainDelay)
	}
	if c.IdleTimeout <= c.ReportInterval {
		bad("IDLE_TIMEOUT %v must be longer than REPORT_INTERVAL %v", c.IdleTimeout, c.ReportInterval)
	}
	if c.LeaseDuration <= 0 || c.RetryPeriod <= 0 || c.RenewDeadline <= 0 ||
		c.LeaseDuration%time.Second != 0 || c.RenewDeadline >= c.LeaseDuration || float64(c.RenewDeadline) <= 1.2*float64(c.RetryPeriod) {
		bad("leader election needs 1.2 x LEADER_RETRY_PERIOD %v < LEADER_RENEW_DEADLINE %v < LEADER_LEASE_DURATION %v (whole seconds)", c.RetryPeriod, c.RenewDeadline, c.LeaseDuration)
	}
	if _, err := userorigin.Check("ROUTING_MODE", c.RoutingMode, "USER_DOMAIN", c.UserDomain); err != nil {
		errs = append(errs, err)
	}
	if c.EntryCodeTTL <= 0 || c.EntryCodeTTL > 10*time.Minute {
		bad("ENTRY_CODE_TTL %v must be positive and at most 10m", c.EntryCodeTTL)
	}
	if c.RateLimit < 0 {
		bad("AUTH_RATE_LIMIT %d must not be negative", c.RateLimit)
	}
	if c.MaxBodyMB < 1 {
		bad("MAX_BODY_MB %d must be at least 1", c.MaxBodyMB)
	}
	if _, err := c.trustedProxies(); err != nil {
		errs = append(errs, err)
	}
	if c.InviteCode != "" && c.InviteCodeFile != "" {
		bad("set SIGNUP_INVITE_CODE or SIGNUP_INVITE_CODE_FILE, not both")
	}
	for _, sa := range settings.SplitList(c.AllowedServiceAccounts) {
		if !saPattern.MatchString(sa) {
			bad("INTERNAL_ALLOWED_SERVICE_ACCOUNTS entry %q is not system:serviceaccount:<namespace>:<name>", sa)
		}
	}
	if _, err := settings.Level(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	for _, a := range settings.SplitList(c.Admins) {
		if err := account.ValidateUser(a); err != nil {
			bad("ADMINS entry %q: %v", a, err)
		}
	}
	if c.AdminGroups != "" && c.AuthProxyHeader == "" {
		bad("ADMIN_GROUPS needs AUTH_PROXY_HEADER: groups are believed only beside the user the SSO proxy asserts")
	}
	if c.CookieName != "" && strings.ContainsAny(c.CookieName, " \t;,=\"") {
		bad("COOKIE_NAME %q is not a cookie token", c.CookieName)
	}
	return errors.Join(errs...)
}

func (c Config) trustedProxies() ([]netip.Prefix, error) {
	return settings.Prefixes("TRUSTED_PROXIES", c.TrustedProxies)
}

// inviteCode returns the invite code, read from its file when one is named.
func (c Config) inviteCode() (string, error) {
	if c.InviteCodeFile == "" {
		return c.InviteCode, nil
	}
	b, err := os.ReadFile(c.InviteCodeFile)
	if err != nil {
		return "", fmt.Errorf("read invite code file: %w", err)
	}
	code := strings.TrimSpace(string(b))
	if code == "" {
		return "", errors.New("invite code file is empty")
	}
	return code, nil
}
