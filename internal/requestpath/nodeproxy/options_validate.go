package nodeproxy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/sandgate/sandgate/internal/requestpath/headerrule"
	"github.com/sandgate/sandgate/internal/settings"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// requestFraming are request headers that carry the request itself, not
// an identity an SSO proxy could assert.
var requestFraming = map[string]bool{
	"cookie": true, "authorization": true, "host": true, "content-length": true, "content-type": true, "expect": true,
}

// Validate reports every problem with o at once and changes nothing. Zero
// values that New fills are accepted.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("nodeproxy: "+format, args...)) }
	if o.NodeName == "" {
		bad("node name is required")
	}
	if err := o.missing(); err != nil {
		errs = append(errs, err)
	}
	if _, err := settings.Origin("auth API URL", o.AuthAPI); err != nil {
		bad("%v", err)
	}
	if _, err := settings.Origin("auth API internal URL", o.AuthAPIInternal); o.AuthAPIInternal != "" && err != nil {
		bad("%v", err)
	}
	if o.Activity != nil && o.Namespace == "" {
		bad("namespace is required with activity tracking")
	}
	if o.WakePath != "" && !strings.HasPrefix(o.WakePath, "/") {
		bad("wake path %q must start with /", o.WakePath)
	}
	if o.RenewPath != "" && !strings.HasPrefix(o.RenewPath, "/") {
		bad("renew path %q must start with /", o.RenewPath)
	}
	for _, err := range CheckCookieNames(o.CookieName, o.OriginCookieName, o.CookieSecure) {
		bad("%v", err)
	}
	if o.RedeemPath != "" && !strings.HasPrefix(o.RedeemPath, "/") {
		bad("redeem path %q must start with /", o.RedeemPath)
	}
	if o.ActivityPath != "" && !strings.HasPrefix(o.ActivityPath, "/") {
		bad("activity path %q must start with /", o.ActivityPath)
	}
	m, err := userorigin.Check("", string(o.RoutingMode), "", o.UserDomain)
	if err != nil {
		bad("%v", err)
	}
	if m == userorigin.Subdomain {
		if o.OriginVerifier == nil || o.EntryVerifier == nil {
			bad("origin session and entry code verifiers are required in subdomain routing")
		}
		if err := CheckPublicOrigin(o.PublicOrigin, o.UserDomain); err != nil {
			bad("%v", err)
		}
	}
	if err := CheckAuthProxyHeader(o.AuthProxyHeader); err != nil {
		bad("auth proxy header: %v", err)
	}
	if o.AuthProxySecret != nil && len(o.AuthProxySecret) < MinAuthProxySecretBytes {
		bad("auth proxy secret of %d bytes is shorter than %d", len(o.AuthProxySecret), MinAuthProxySecretBytes)
	}
	if o.AuthProxySecret != nil && o.AuthProxyHeader == "" {
		bad("an auth proxy secret needs the auth proxy header it proves")
	}
	if o.HopKey != nil && len(o.HopKey) < MinHopKeyBytes {
		bad("hop key of %d bytes is shorter than %d", len(o.HopKey), MinHopKeyBytes)
	}
	if o.PeerPort < 0 || o.PeerPort > 65535 {
		bad("peer port %d outside 1-65535", o.PeerPort)
	}
	for name, v := range map[string]int64{
		"max body bytes": o.MaxBodyBytes, "buffer body bytes": int64(o.BufferBodyBytes),
		"max in-flight per user": int64(o.MaxInFlightPerUser), "WebSocket max message bytes": o.WSMaxMessageBytes,
		"max header bytes": int64(o.MaxHeaderBytes),
	} {
		if v < 0 {
			bad("%s %d is negative", name, v)
		}
	}
	for name, d := range map[string]time.Duration{
		"cookie max age": o.CookieMaxAge, "header timeout": o.HeaderTimeout, "body timeout": o.BodyTimeout,
		"write timeout": o.WriteTimeout, "idle timeout": o.IdleTimeout, "upstream idle timeout": o.UpstreamIdleTimeout,
		"dial timeout": o.DialTimeout, "renew timeout": o.RenewTimeout, "drain timeout": o.DrainTimeout,
		"retry after": o.RetryAfter, "wake timeout": o.WakeTimeout, "access log summary interval": o.AccessLogSummary,
	} {
		if d < 0 {
			bad("%s %v is negative", name, d)
		}
	}
	for _, err := range CheckHeaderAllowlist(o.HeaderAllowlist, o.AuthProxyHeader) {
		bad("%v", err)
	}
	return errors.Join(errs...)
}

// missing reports collaborators New cannot do without.
func (o Options) missing() error {
	if o.Directory == nil || o.Verifier == nil || o.Handshaker == nil {
		return errors.New("nodeproxy: directory, verifier and handshaker are required")
	}
	return nil
}

// CheckCookieNames checks the session and origin cookie names (empty
// means the default): cookie tokens, distinct, and a __Host- name only
// on Secure cookies.
func CheckCookieNames(cookie, originCookie string, secure bool) []error {
	var errs []error
	if cookie != "" && !validToken(cookie) {
		errs = append(errs, fmt.Errorf("cookie name %q is not a cookie token", cookie))
	}
	if strings.HasPrefix(cookie, securePrefix) && !secure {
		errs = append(errs, fmt.Errorf("cookie name %q needs COOKIE_SECURE", cookie))
	}
	if originCookie != "" && (!validToken(originCookie) || originCookie == cookie) {
		errs = append(errs, fmt.Errorf("origin cookie name %q is not a cookie token distinct from the session cookie's", originCookie))
	}
	return errs
}

// CheckPublicOrigin checks the main origin of subdomain routing: an
// origin whose host is no user's.
func CheckPublicOrigin(origin, userDomain string) error {
	u, err := settings.Origin("public origin", origin)
	if err != nil {
		return err
	}
	return userorigin.ValidateMainHost(u.Host, userDomain)
}

// CheckAuthProxyHeader checks that h, when set, names a header an SSO
// proxy can assert a user with.
func CheckAuthProxyHeader(h string) error {
	if l := strings.ToLower(h); l != "" && (!validToken(l) || slices.Contains(headerrule.HopByHop, l) || requestFraming[l]) {
		return fmt.Errorf("%q is not a header name an SSO proxy can assert a user with", h)
	}
	return nil
}

// CheckHeaderAllowlist checks the client headers allowlisted for the
// app: header names, none of which may ever be forwarded (credentials,
// hop-by-hop and identity headers, authProxyHeader among them).
func CheckHeaderAllowlist(list []string, authProxyHeader string) []error {
	// The rule to a peer is the rule to the app without the allowlist:
	// what it drops, no allowlist can let through.
	denied := newHeaderRules(nil, authProxyHeader).toPeer.HTTP
	var errs []error
	for _, h := range list {
		name := strings.ToLower(strings.TrimSpace(h))
		switch {
		case !validToken(name):
			errs = append(errs, fmt.Errorf("allowlisted header %q is not a header name", h))
		case !denied.Passes([]byte(name)):
			errs = append(errs, fmt.Errorf("header %q can never be forwarded upstream, even when allowlisted", h))
		}
	}
	return errs
}
