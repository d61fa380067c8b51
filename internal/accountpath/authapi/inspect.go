package authapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/defaults"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// Verdicts of Inspect.
const (
	VerdictValid         = "valid"
	VerdictExpired       = "expired"
	VerdictBadSignature  = "bad signature"
	VerdictUnknownKID    = "unknown kid"
	VerdictRevoked       = "revoked"
	VerdictMalformed     = "malformed"
	VerdictInvalidClaims = "invalid claims"
)

// ClaimGetter reads one claim from the API server.
type ClaimGetter interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*extensions.SandboxClaim, error)
}

// InspectOptions configures Inspect.
type InspectOptions struct {
	// Keys verifies signatures (a JWKS or the key ring). Required.
	Keys jwt.KeySource
	// Issuer and Audience are the expected iss and aud; empty means the
	// defaults.
	Issuer, Audience string
	// Claims, when set, lets Inspect check revocation on the user's claim.
	Claims ClaimGetter
	// ClaimPrefix names the user's claim; empty means the default.
	ClaimPrefix string
	// CookieMaxAge is the session's maximum age, to say whether an expired
	// token can still be renewed; zero means the default.
	CookieMaxAge time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Report is what Inspect found. Header and Claims are printed as sent, even
// when they cannot be trusted; Verdict says whether they can.
type Report struct {
	Header     json.RawMessage `json:"header,omitempty"`
	Claims     json.RawMessage `json:"claims,omitempty"`
	Verdict    string          `json:"verdict"`
	Detail     string          `json:"detail,omitempty"`
	Revocation string          `json:"revocation"`
}

// Valid reports whether the verdict is valid.
func (r Report) Valid() bool { return r.Verdict == VerdictValid }

// Inspect decodes and verifies a session token (or a raw cookie value or
// header; see TokenFromInput) and, when it can read the user's claim,
// checks revocation. It never returns an error: problems are verdicts.
func Inspect(ctx context.Context, raw string, o InspectOptions) Report {
	defaults.Set(&o.Issuer, DefaultIssuer)
	defaults.Set(&o.Audience, DefaultAudience)
	defaults.Set(&o.ClaimPrefix, DefaultClaimPrefix)
	defaults.Set(&o.CookieMaxAge, DefaultCookieMaxAge)
	defaults.Clock(&o.Now)
	rep := Report{Revocation: "not checked"}
	tok := TokenFromInput(raw)
	d, err := jwt.Decode(tok)
	if err != nil {
		rep.Verdict, rep.Detail = VerdictMalformed, err.Error()
		return rep
	}
	rep.Header, rep.Claims = d.Header, d.Payload
	if o.Keys == nil {
		rep.Verdict, rep.Detail = VerdictUnknownKID, "no keys to verify with"
		return rep
	}
	v, err := jwt.NewVerifier(jwt.VerifierOptions{
		Keys: o.Keys, Issuer: o.Issuer, Audience: o.Audience, Leeway: jwtLeeway, CacheSize: -1, Now: o.Now,
	})
	if err != nil {
		rep.Verdict, rep.Detail = VerdictInvalidClaims, err.Error()
		return rep
	}
	c, err := v.VerifyIgnoringExpiry(tok)
	switch {
	case errors.Is(err, jwt.ErrBadSignature):
		rep.Verdict = VerdictBadSignature
	case errors.Is(err, jwt.ErrUnknownKey):
		rep.Verdict = VerdictUnknownKID
	case errors.Is(err, jwt.ErrClaims):
		rep.Verdict = VerdictInvalidClaims
	case err != nil:
		rep.Verdict = VerdictMalformed
	}
	if err != nil {
		rep.Detail = err.Error()
		return rep
	}
	if o.Claims != nil {
		revoked, detail := checkRevoked(ctx, o, c)
		rep.Revocation = detail
		if revoked {
			rep.Verdict, rep.Detail = VerdictRevoked, detail
			return rep
		}
	}
	now := o.Now()
	ends := c.AuthTime.Add(o.CookieMaxAge)
	if !now.Before(c.Expiry.Add(jwtLeeway)) {
		rep.Verdict = VerdictExpired
		if now.Before(ends) {
			rep.Detail = fmt.Sprintf("expired %s ago; renewable until %s", now.Sub(c.Expiry).Round(time.Second), ends.UTC().Format(time.RFC3339))
		} else {
			rep.Detail = fmt.Sprintf("expired; the session ended at %s", ends.UTC().Format(time.RFC3339))
		}
		return rep
	}
	rep.Verdict = VerdictValid
	rep.Detail = fmt.Sprintf("expires in %s; session ends %s", c.Expiry.Sub(now).Round(time.Second), ends.UTC().Format(time.RFC3339))
	return rep
}

// checkRevoked applies the node proxies' rule to the user's claim.
func checkRevoked(ctx context.Context, o InspectOptions, c jwt.Claims) (bool, string) {
	claim, err := o.Claims.Get(ctx, account.ClaimName(o.ClaimPrefix, c.User), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return true, "checked: the account's claim does not exist"
	}
	if err != nil {
		return false, "not checked: " + err.Error()
	}
	a, err := account.FromClaim(claim)
	if err != nil {
		return true, "checked: " + err.Error()
	}
	if !a.OwnsSession(c.SessionID) {
		return true, "checked: the session belongs to another (earlier) claim of this user name"
	}
	if c.Epoch < a.Epoch {
		return true, fmt.Sprintf("checked: token epoch %d is below the account's %d", c.Epoch, a.Epoch)
	}
	if !a.SessionValid(c.SessionID, c.Epoch) {
		return true, "checked: the session id is on the revoked list"
	}
	return false, "checked: not revoked"
}

// TokenFromInput extracts a token from what an operator pastes: the token
// itself, a cookie value, `name=value`, or a whole Cookie or Set-Cookie
// header, in which the session cookie (any name ending in dsh_gw_session)
// or the only JWT-shaped value is taken.
func TokenFromInput(raw string) string {
	s := strings.TrimSpace(raw)
	for _, p := range []string{"set-cookie:", "cookie:"} {
		if len(s) >= len(p) && strings.EqualFold(s[:len(p)], p) {
			s = strings.TrimSpace(s[len(p):])
		}
	}
	if !strings.ContainsAny(s, "=;") {
		return strings.Trim(s, `"`)
	}
	var jwtLike []string
	for _, part := range strings.Split(s, ";") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		value = strings.Trim(strings.TrimSpace(value), `"`)
		if strings.HasSuffix(name, DefaultCookieName) {
			return value
		}
		if strings.Count(value, ".") == 2 {
			jwtLike = append(jwtLike, value)
		}
	}
	if len(jwtLike) == 1 {
		return jwtLike[0]
	}
	return s
}
