package nodeproxyd

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/requestpath/nodeproxy"
	"github.com/sandgate/sandgate/internal/settings"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// Config is every setting of `nodeproxy`, as the environment and flags
// give it.
type Config struct {
	ListenAddr, OpsAddr       string
	TLSListenAddr             string
	TLSCertFile, TLSKeyFile   string
	NodeName                  string
	Kubeconfig                string
	Namespace, ClaimPrefix    string
	AppContainer              string
	AppPort                   int
	AuthAPIURL, JWKSURL       string
	AuthAPIInternalURL        string
	AuthProxyHeader           string
	AuthProxySecretFile       string
	Issuer, Audience          string
	JWKSRefresh               time.Duration
	SATokenFile               string
	CookieName                string
	CookieSecure              bool
	RoutingMode, UserDomain   string
	PublicOrigin              string
	OriginCookieName          string
	AllowInsecure             bool
	CookieMaxAge              time.Duration
	PeerPort                  int
	HopKeyFile                string
	TrustedProxies            string
	MaxBodyMB                 int
	BufferBodyKB              int
	MaxInFlightPerUser        int
	WSMaxMessageBytes         int
	HeaderAllowlist           string
	MaxHeaderKB               int
	TokenSource               string
	LogRoot                   string
	LogTailLines              int
	TokenPattern, TokenStream string
	KubeletPodsDir, TokenFile string
	HandshakeTimeout          time.Duration
	HeaderTimeout             time.Duration
	BodyTimeout, WriteTimeout time.Duration
	IdleTimeout               time.Duration
	UpstreamIdleTimeout       time.Duration
	RetryAfter                time.Duration
	WakeTimeout               time.Duration
	ReportInterval            time.Duration
	ShutdownTimeout           time.Duration
	DrainDelay                time.Duration
	SyncTimeout               time.Duration
	LogLevel                  string
	AccessLogSummary          time.Duration
	Egress                    EgressConfig // the egress listener's block (egress_config.go)

	problems []error // values the environment or flags could not parse
}

// DefaultAccessLogSummary is how often the access log's summary of plain
// successes is written: on real nodes every line costs the container
// runtime as much CPU as the request cost the proxy (bench/FINDINGS.md).
const DefaultAccessLogSummary = 10 * time.Second

// Defaults are the seed's defaults where the seed has the setting, and the
// auth API's for what the two must agree on.
func Defaults() Config {
	return Config{
		ListenAddr: ":8080", OpsAddr: ":9090", TLSListenAddr: ":8443",
		Namespace: "dsh-demo", ClaimPrefix: informer.DefaultClaimPrefix, AppPort: informer.DefaultPort,
		AuthAPIURL: "http://authapi.sandgate.svc:8080",
		Issuer:     "sandgate-authapi", Audience: "sandgate", JWKSRefresh: 5 * time.Minute,
		SATokenFile:  "/var/run/secrets/sandgate/token",
		CookieSecure: true, CookieMaxAge: nodeproxy.DefaultCookieMaxAge,
		MaxBodyMB: nodeproxy.DefaultMaxBodyBytes >> 20, BufferBodyKB: nodeproxy.DefaultBufferBodyBytes >> 10,
		MaxInFlightPerUser: nodeproxy.DefaultMaxInFlightPerUser, WSMaxMessageBytes: nodeproxy.DefaultWSMaxMessageBytes,
		MaxHeaderKB: nodeproxy.DefaultMaxHeaderBytes >> 10,
		TokenSource: handshake.SourceLog, LogRoot: handshake.DefaultLogRoot, LogTailLines: handshake.DefaultTailLines,
		TokenStream: handshake.StreamStdout, KubeletPodsDir: handshake.DefaultPodsRoot, TokenFile: handshake.DefaultTokenFile,
		HandshakeTimeout: 5 * time.Second, HeaderTimeout: nodeproxy.DefaultHeaderTimeout, BodyTimeout: nodeproxy.DefaultBodyTimeout,
		WriteTimeout: nodeproxy.DefaultWriteTimeout, IdleTimeout: nodeproxy.DefaultIdleTimeout,
		UpstreamIdleTimeout: nodeproxy.DefaultUpstreamIdle, RetryAfter: nodeproxy.DefaultRetryAfter,
		WakeTimeout: nodeproxy.DefaultWakeTimeout, ReportInterval: activity.DefaultReportInterval,
		ShutdownTimeout: nodeproxy.DefaultDrainTimeout, DrainDelay: 15 * time.Second, SyncTimeout: 2 * time.Minute,
		LogLevel: "info", AccessLogSummary: DefaultAccessLogSummary,
		Egress: egressDefaults(),
	}
}

func (c *Config) settings() []settings.Setting {
	return append([]settings.Setting{
		settings.Var("listen-addr", "LISTEN_ADDR", "listener for browsers and API clients (/u/<user>/** and everything the auth API serves)", settings.String(&c.ListenAddr)),
		settings.Var("tls-listen-addr", "TLS_LISTEN_ADDR", "HTTPS listener for browsers, serving the same as LISTEN_ADDR; only with TLS_CERT_FILE", settings.String(&c.TLSListenAddr)),
		settings.Var("tls-cert-file", "TLS_CERT_FILE", "PEM certificate chain for TLS_LISTEN_ADDR (with TLS_KEY_FILE); reloaded when the file changes; empty serves no HTTPS", settings.String(&c.TLSCertFile)),
		settings.Var("tls-key-file", "TLS_KEY_FILE", "PEM private key of TLS_CERT_FILE", settings.String(&c.TLSKeyFile)),
		settings.Var("ops-addr", "OPS_ADDR", "listener for /healthz, /readyz and /metrics", settings.String(&c.OpsAddr)),
		settings.Var("node-name", "NODE_NAME", "this node (the downward API's spec.nodeName); required", settings.String(&c.NodeName)),
		settings.Kubeconfig(&c.Kubeconfig),
		settings.Var("namespace", "NAMESPACE", "namespace of the account claims, Sandboxes and sandbox pods", settings.String(&c.Namespace)),
		settings.Var("claim-prefix", "CLAIM_PREFIX", "a user's claim is named <prefix><user>", settings.String(&c.ClaimPrefix)),
		settings.Var("app-container", "APP_CONTAINER", "the agent app's container in a sandbox pod; empty means the first", settings.String(&c.AppContainer)),
		settings.Var("app-port", "APP_PORT", "the agent app's port when its container declares none", settings.Int(&c.AppPort)),
		settings.Var("authapi-url", "AUTHAPI_URL", "auth API base URL: paths outside /u/ go there, and session renewals", settings.String(&c.AuthAPIURL)),
		settings.Var("authapi-internal-url", "AUTHAPI_INTERNAL_URL", "auth API base URL for its /internal/ endpoints (session renewal, wake, activity, entry-code redemption), its INTERNAL_ADDR listener; empty means AUTHAPI_URL", settings.String(&c.AuthAPIInternalURL)),
		settings.Var("jwks-url", "JWKS_URL", "JWKS of the session signing keys; empty means <AUTHAPI_URL>/.well-known/jwks.json", settings.String(&c.JWKSURL)),
		settings.Var("issuer", "ISSUER", "required iss of session tokens", settings.String(&c.Issuer)),
		settings.Var("audience", "AUDIENCE", "required aud of session tokens", settings.String(&c.Audience)),
		settings.Var("jwks-refresh", "JWKS_REFRESH", "how often the JWKS is fetched again (also on an unknown kid, and when the auth API names another version)", settings.Duration(&c.JWKSRefresh)),
		settings.Var("sa-token-file", "SA_TOKEN_FILE", "projected ServiceAccount token for the auth API's internal endpoints", settings.String(&c.SATokenFile)),
		settings.Var("cookie-name", "COOKIE_NAME", "session cookie name; empty means dsh_gw_session, or __Host-dsh_gw_session when secure", settings.String(&c.CookieName)),
		settings.Var("routing-mode", "ROUTING_MODE", "path: agents under /u/<user>/ on every host; subdomain: the agent of <user> on <user>.<USER_DOMAIN>, its own origin", settings.String(&c.RoutingMode)),
		settings.Var("user-domain", "USER_DOMAIN", "parent domain of the user origins in subdomain routing (wildcard DNS and certificate)", settings.String(&c.UserDomain)),
		settings.Var("public-origin", "PUBLIC_ORIGIN", "main origin (https://host[:port]) where a browser without an origin session is sent, in subdomain routing", settings.String(&c.PublicOrigin)),
		settings.Var("origin-cookie-name", "ORIGIN_COOKIE_NAME", "user origins' host-only session cookie; empty means sandgate_origin, or __Host-sandgate_origin when secure", settings.String(&c.OriginCookieName)),
		settings.Var("cookie-secure", "COOKIE_SECURE", "session cookies are Secure (serve behind TLS)", settings.Bool(&c.CookieSecure)),
		settings.Var("allow-insecure-cookies", "ALLOW_INSECURE_COOKIES", "permit COOKIE_SECURE=false (local plain-HTTP demo only)", settings.Bool(&c.AllowInsecure)),
		settings.Var("cookie-max-age", "COOKIE_MAX_AGE", "session length from login; older sessions are not renewed", settings.Duration(&c.CookieMaxAge)),
		settings.Var("peer-port", "PEER_PORT", "port of the other nodes' proxies; 0 means this proxy's listen port", settings.Int(&c.PeerPort)),
		settings.Var("hop-key-file", "HOP_KEY_FILE", "key shared by every node proxy (at least 32 bytes; read at start) that authenticates hops: only a hop whose HMAC proof verifies has its forwarded headers trusted; empty trusts hops by node address (set it in production)", settings.String(&c.HopKeyFile)),
		settings.Var("trusted-proxies", "TRUSTED_PROXIES", "comma-separated CIDRs whose X-Forwarded-For/Proto/Host are kept (ingress, TLS terminator)", settings.String(&c.TrustedProxies)),
		settings.Var("auth-proxy-header", "AUTH_PROXY_HEADER", "the auth API's SSO user header (keep equal to the auth API's): only TRUSTED_PROXIES may send it (with AUTH_PROXY_SECRET_FILE, only a request with the proof), and it never reaches an app", settings.String(&c.AuthProxyHeader)),
		settings.Var("auth-proxy-secret-file", "AUTH_PROXY_SECRET_FILE", "file with the secret (at least 32 bytes; read at start) the SSO proxy proves on every request as Authorization: Basic <AUTH_PROXY_HEADER value>:<secret> (oauth2-proxy's --basic-auth-password): AUTH_PROXY_HEADER is then kept only with that proof, from any address, and the proof never goes upstream", settings.String(&c.AuthProxySecretFile)),
		settings.Var("max-body-mb", "MAX_BODY_MB", "request body limit in MiB (413 past it)", settings.Int(&c.MaxBodyMB)),
		settings.Var("buffer-body-kb", "BUFFER_BODY_KB", "bodies up to this size are read whole before the app sees the request", settings.Int(&c.BufferBodyKB)),
		settings.Var("max-in-flight-per-user", "MAX_IN_FLIGHT_PER_USER", "concurrent requests plus WebSockets per user (503 / close 1011 past it)", settings.Int(&c.MaxInFlightPerUser)),
		settings.Var("ws-max-message-bytes", "WS_MAX_MESSAGE_BYTES", "largest WebSocket message; a larger one closes the connection (1009)", settings.Int(&c.WSMaxMessageBytes)),
		settings.Var("upstream-header-allowlist", "UPSTREAM_HEADER_ALLOWLIST", "comma-separated client headers sent to the app; empty applies the denylist", settings.String(&c.HeaderAllowlist)),
		settings.Var("max-header-kb", "MAX_HEADER_KB", "largest request header block (431 past it)", settings.Int(&c.MaxHeaderKB)),
		settings.Var("token-source", "TOKEN_SOURCE", "where launch tokens come from: log (the app's launch line in its pod's log files) or file (a token file the app writes into a volume of its pod)", settings.String(&c.TokenSource)),
		settings.Var("log-root", "LOG_ROOT", "the node's pod log directory, read for launch tokens", settings.String(&c.LogRoot)),
		settings.Var("log-tail-lines", "DSH_LOG_TAIL_LINES", "log lines searched for the launch token, newest first", settings.Int(&c.LogTailLines)),
		settings.Var("token-pattern", "TOKEN_PATTERN", "regular expression (Go RE2) matching the app's launch line, the token in a (?P<token>...) group; empty matches \"dsh web: listening on <url>?token=<16-512 URL-safe characters>\"", settings.String(&c.TokenPattern)),
		settings.Var("token-stream", "TOKEN_STREAM", "container stream the launch line is printed to: stdout, stderr or any", settings.String(&c.TokenStream)),
		settings.Var("kubelet-pods-dir", "KUBELET_PODS_DIR", "the kubelet's pod directory on this node, read with TOKEN_SOURCE=file", settings.String(&c.KubeletPodsDir)),
		settings.Var("token-file", "TOKEN_FILE", "the token file's path below <KUBELET_PODS_DIR>/<pod UID>/ with TOKEN_SOURCE=file", settings.String(&c.TokenFile)),
		settings.Var("handshake-timeout", "HANDSHAKE_TIMEOUT", "bound on one log read plus token exchange", settings.Duration(&c.HandshakeTimeout)),
		settings.Var("header-timeout", "HEADER_TIMEOUT", "time a client has to send its request headers", settings.Duration(&c.HeaderTimeout)),
		settings.Var("body-timeout", "BODY_TIMEOUT", "time a client has to send its request body", settings.Duration(&c.BodyTimeout)),
		settings.Var("write-timeout", "WRITE_TIMEOUT", "longest a write to a client may block (a stalled reader is dropped)", settings.Duration(&c.WriteTimeout)),
		settings.Var("keepalive-timeout", "KEEPALIVE_TIMEOUT", "keep-alive time between requests", settings.Duration(&c.IdleTimeout)),
		settings.Var("upstream-idle-timeout", "UPSTREAM_IDLE_TIMEOUT", "longest an upstream may stay silent during an HTTP response", settings.Duration(&c.UpstreamIdleTimeout)),
		settings.Var("retry-after", "RETRY_AFTER", "Retry-After sent with 503", settings.Duration(&c.RetryAfter)),
		settings.Var("wake-timeout", "WAKE_TIMEOUT", "how long a request to a suspended sandbox is held while it wakes", settings.Duration(&c.WakeTimeout)),
		settings.Var("report-interval", "REPORT_INTERVAL", "how often activity is reported to the auth API (keep equal to the auth API's)", settings.Duration(&c.ReportInterval)),
		settings.Var("shutdown-timeout", "SHUTDOWN_TIMEOUT", "how long shutdown drains requests before closing them", settings.Duration(&c.ShutdownTimeout)),
		settings.Var("drain-delay", "DRAIN_DELAY", "how long \"nodeproxy drain\" (the preStop hook) holds SIGTERM back after /readyz starts failing, for endpoints to stop sending requests", settings.Duration(&c.DrainDelay)),
		settings.Var("sync-timeout", "SYNC_TIMEOUT", "how long start-up waits for informers and the JWKS before serving anyway; until the claims are listed, a signed-in request is answered 503 with Retry-After", settings.Duration(&c.SyncTimeout)),
		settings.Var("log-level", "LOG_LEVEL", "debug, info, warn or error", settings.String(&c.LogLevel)),
		settings.Var("access-log-summary", "ACCESS_LOG_SUMMARY", "plain successes (2xx with no error, renewal, retry or wake hold) get no access-log line of their own: this often, one line per user and route counts them; every other request keeps its line; 0 writes a line for every request", settings.Duration(&c.AccessLogSummary)),
	}, c.Egress.settings()...)
}

// Load starts from Defaults, lets the environment set them and the flags
// override them. Unparsable values are kept as problems for Validate; only
// flag syntax errors (and --help) return an error here.
func Load(args []string, getenv func(string) string, usageOut io.Writer) (Config, error) {
	c := Defaults()
	var err error
	c.problems, err = settings.Load("nodeproxy", c.settings(), args, getenv, usageOut, func() { usage(usageOut) })
	return c, err
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: nodeproxy [flags]

sandgate's node proxy: serves /u/<user>/** from the user's sandbox pod
(HTTP, SSE, WebSocket), verifying session cookies offline and routing from
informer caches, and passes every other path to the auth API. Every flag can
also be set by the environment variable in brackets; flags win. Durations
take "90s", "10m" or bare seconds.

`)
	d := Defaults()
	settings.Usage(w, d.settings())
	fmt.Fprint(w, `
The process refuses to start with COOKIE_SECURE=false unless
ALLOW_INSECURE_COOKIES=1. /readyz passes once the informers have synced and
the JWKS has loaded. With TLS_CERT_FILE and TLS_KEY_FILE it also serves
HTTPS on TLS_LISTEN_ADDR, for browsers that reach a node directly;
LISTEN_ADDR stays plain HTTP for the other nodes' hops and for clients
behind a TLS terminator.
`)
}

// Validate reports every problem at once and changes nothing.
func (c Config) Validate() error {
	errs := append([]error(nil), c.problems...)
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !c.CookieSecure && !c.AllowInsecure {
		bad("COOKIE_SECURE=false needs ALLOW_INSECURE_COOKIES=1: insecure cookies are for a local plain-HTTP demo only")
	}
	for name, v := range map[string]string{"LISTEN_ADDR": c.ListenAddr, "OPS_ADDR": c.OpsAddr, "NODE_NAME": c.NodeName,
		"NAMESPACE": c.Namespace, "ISSUER": c.Issuer, "AUDIENCE": c.Audience, "LOG_ROOT": c.LogRoot} {
		if v == "" {
			bad("%s must not be empty", name)
		}
	}
	m, err := userorigin.Check("ROUTING_MODE", c.RoutingMode, "USER_DOMAIN", c.UserDomain)
	if err != nil {
		errs = append(errs, err)
	}
	if err := nodeproxy.CheckPublicOrigin(c.PublicOrigin, c.UserDomain); m == userorigin.Subdomain && err != nil {
		bad("PUBLIC_ORIGIN: %v", err)
	}
	if c.ListenAddr == c.OpsAddr {
		bad("LISTEN_ADDR and OPS_ADDR must differ")
	}
	if err := account.CheckClaimPrefix(c.ClaimPrefix); err != nil {
		bad("CLAIM_PREFIX: %v", err)
	}
	errs = append(errs, c.validateTLS()...)
	errs = append(errs, c.validateHandshake()...)
	if _, err := c.listenPort(); err != nil {
		errs = append(errs, err)
	}
	for name, v := range map[string]string{"AUTHAPI_URL": c.AuthAPIURL, "AUTHAPI_INTERNAL_URL": c.authAPIInternalURL()} {
		if _, err := settings.Origin(name, v); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := settings.HTTPURL("JWKS_URL", c.jwksURL()); err != nil {
		errs = append(errs, err)
	}
	for _, err := range nodeproxy.CheckCookieNames(c.CookieName, c.OriginCookieName, c.CookieSecure) {
		bad("COOKIE_NAME/ORIGIN_COOKIE_NAME: %v", err)
	}
	if err := nodeproxy.CheckAuthProxyHeader(c.AuthProxyHeader); err != nil {
		bad("AUTH_PROXY_HEADER %v", err)
	}
	for _, err := range nodeproxy.CheckHeaderAllowlist(settings.SplitList(c.HeaderAllowlist), c.AuthProxyHeader) {
		bad("UPSTREAM_HEADER_ALLOWLIST: %v", err)
	}
	if c.PeerPort < 0 || c.PeerPort > 65535 {
		bad("PEER_PORT %d outside 1-65535", c.PeerPort)
	}
	for name, v := range map[string]int{"MAX_BODY_MB": c.MaxBodyMB, "BUFFER_BODY_KB": c.BufferBodyKB,
		"MAX_IN_FLIGHT_PER_USER": c.MaxInFlightPerUser, "WS_MAX_MESSAGE_BYTES": c.WSMaxMessageBytes,
		"MAX_HEADER_KB": c.MaxHeaderKB, "DSH_LOG_TAIL_LINES": c.LogTailLines, "APP_PORT": c.AppPort} {
		if v < 1 {
			bad("%s %d must be at least 1", name, v)
		}
	}
	if c.BufferBodyKB > c.MaxBodyMB<<10 {
		bad("BUFFER_BODY_KB %d exceeds MAX_BODY_MB %d", c.BufferBodyKB, c.MaxBodyMB)
	}
	for name, d := range map[string]time.Duration{"JWKS_REFRESH": c.JWKSRefresh, "COOKIE_MAX_AGE": c.CookieMaxAge,
		"HANDSHAKE_TIMEOUT": c.HandshakeTimeout, "HEADER_TIMEOUT": c.HeaderTimeout, "BODY_TIMEOUT": c.BodyTimeout,
		"WRITE_TIMEOUT": c.WriteTimeout, "KEEPALIVE_TIMEOUT": c.IdleTimeout, "UPSTREAM_IDLE_TIMEOUT": c.UpstreamIdleTimeout,
		"RETRY_AFTER": c.RetryAfter, "SHUTDOWN_TIMEOUT": c.ShutdownTimeout, "SYNC_TIMEOUT": c.SyncTimeout,
		"WAKE_TIMEOUT": c.WakeTimeout, "REPORT_INTERVAL": c.ReportInterval} {
		if d <= 0 {
			bad("%s %v must be positive", name, d)
		}
	}
	if c.AuthProxySecretFile != "" && c.AuthProxyHeader == "" {
		bad("AUTH_PROXY_SECRET_FILE needs AUTH_PROXY_HEADER, the header its proof vouches for")
	}
	if _, err := c.trustedProxies(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.authProxySecret(); err != nil {
		errs = append(errs, err)
	}
	if _, err := c.hopKey(); err != nil {
		errs = append(errs, err)
	}
	if _, err := settings.Level(c.LogLevel); err != nil {
		errs = append(errs, err)
	}
	if c.AccessLogSummary < 0 {
		bad("ACCESS_LOG_SUMMARY %v must not be negative", c.AccessLogSummary)
	}
	if c.DrainDelay < 0 {
		bad("DRAIN_DELAY %v must not be negative", c.DrainDelay)
	}
	errs = append(errs, c.Egress.validate(c.ListenAddr, c.OpsAddr, c.TLSListenAddr)...)
	return errors.Join(errs...)
}

// tlsEnabled reports whether the HTTPS listener runs.
func (c Config) tlsEnabled() bool { return c.TLSCertFile != "" }

// validateTLS checks the HTTPS settings: both files or neither, a pair
// that loads, and a listener of its own.
func (c Config) validateTLS() []error {
	switch {
	case c.TLSCertFile == "" && c.TLSKeyFile == "":
		return nil
	case c.TLSCertFile == "" || c.TLSKeyFile == "":
		return []error{errors.New("TLS_CERT_FILE and TLS_KEY_FILE must be set together")}
	}
	var errs []error
	if _, err := nodeproxy.LoadCertificate(c.TLSCertFile, c.TLSKeyFile); err != nil {
		errs = append(errs, fmt.Errorf("TLS_CERT_FILE/TLS_KEY_FILE: %w", err))
	}
	if _, _, err := net.SplitHostPort(c.TLSListenAddr); err != nil {
		errs = append(errs, fmt.Errorf("TLS_LISTEN_ADDR %q is not host:port", c.TLSListenAddr))
	}
	if c.TLSListenAddr == c.ListenAddr || c.TLSListenAddr == c.OpsAddr {
		errs = append(errs, fmt.Errorf("TLS_LISTEN_ADDR %q must differ from LISTEN_ADDR and OPS_ADDR", c.TLSListenAddr))
	}
	return errs
}

// jwksURL is JWKS_URL or the auth API's.
func (c Config) jwksURL() string {
	if c.JWKSURL != "" {
		return c.JWKSURL
	}
	return strings.TrimSuffix(c.AuthAPIURL, "/") + "/.well-known/jwks.json"
}

// authAPIInternalURL is AUTHAPI_INTERNAL_URL or AUTHAPI_URL, without a
// trailing slash.
func (c Config) authAPIInternalURL() string {
	if c.AuthAPIInternalURL != "" {
		return strings.TrimSuffix(c.AuthAPIInternalURL, "/")
	}
	return strings.TrimSuffix(c.AuthAPIURL, "/")
}

// listenPort is the port of LISTEN_ADDR, the default PEER_PORT.
func (c Config) listenPort() (int, error) {
	_, port, err := net.SplitHostPort(c.ListenAddr)
	if err != nil {
		return 0, fmt.Errorf("LISTEN_ADDR %q is not host:port", c.ListenAddr)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return 0, fmt.Errorf("LISTEN_ADDR %q has no numeric port", c.ListenAddr)
	}
	return n, nil
}

func (c Config) peerPort() int {
	if c.PeerPort != 0 {
		return c.PeerPort
	}
	p, _ := c.listenPort()
	return p
}

func (c Config) trustedProxies() ([]netip.Prefix, error) {
	return settings.Prefixes("TRUSTED_PROXIES", c.TrustedProxies)
}

// proxyOptions is the node proxy's Options as the settings give them,
// without the parts Assemble builds (caches, verifiers, handshaker, token,
// activity, logging, metrics).
func (c Config) proxyOptions() nodeproxy.Options {
	trusted, _ := c.trustedProxies() // validated
	return nodeproxy.Options{
		NodeName: c.NodeName, Namespace: c.Namespace,
		AuthAPI: c.AuthAPIURL, AuthAPIInternal: c.authAPIInternalURL(), AuthProxyHeader: c.AuthProxyHeader,
		CookieName: c.CookieName, CookieSecure: c.CookieSecure, CookieMaxAge: c.CookieMaxAge,
		RoutingMode: userorigin.Mode(c.RoutingMode), UserDomain: c.UserDomain, PublicOrigin: c.PublicOrigin,
		OriginCookieName: c.OriginCookieName,
		PeerPort:         c.peerPort(), TrustedProxies: trusted,
		MaxBodyBytes: int64(c.MaxBodyMB) << 20, BufferBodyBytes: c.BufferBodyKB << 10,
		MaxInFlightPerUser: c.MaxInFlightPerUser, WSMaxMessageBytes: int64(c.WSMaxMessageBytes),
		HeaderAllowlist: settings.SplitList(c.HeaderAllowlist), MaxHeaderBytes: c.MaxHeaderKB << 10,
		HeaderTimeout: c.HeaderTimeout, BodyTimeout: c.BodyTimeout, WriteTimeout: c.WriteTimeout,
		IdleTimeout: c.IdleTimeout, UpstreamIdleTimeout: c.UpstreamIdleTimeout, RetryAfter: c.RetryAfter,
		AccessLogSummary: c.AccessLogSummary,
		DrainTimeout:     c.ShutdownTimeout, WakeTimeout: c.WakeTimeout,
	}
}
