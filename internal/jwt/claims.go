package jwt

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	gojwt "github.com/golang-jwt/jwt/v5"
)

// Claims is what a session token says about its holder. Times have one
// second resolution on the wire.
type Claims struct {
	// User is the account name, carried as sub.
	User string
	// SessionID identifies one login (sid): renewals keep it, logout revokes it.
	SessionID string
	// IssuedAt is iat. Sign sets it from its clock.
	IssuedAt time.Time
	// Expiry is exp. Sign sets it to IssuedAt plus the signer's lifetime.
	Expiry time.Time
	// AuthTime is when the user logged in (auth_time); callers allow renewal
	// until AuthTime plus the cookie's maximum age.
	AuthTime time.Time
	// Epoch is the user's session epoch when the token was issued; a token
	// whose Epoch is below the user's current epoch is revoked.
	Epoch int64
	// Origin binds a token to one user origin (scheme://host) in
	// subdomain routing: the entry codes and origin sessions carry it,
	// main-origin sessions do not.
	Origin string
	// ID is jti, set on single-use entry codes.
	ID string
}

// sessionIDBytes is 128 bits, encoded as 22 base64url characters.
const sessionIDBytes = 16

// newSessionID returns a fresh random session id.
func newSessionID() string {
	b := make([]byte, sessionIDBytes)
	rand.Read(b) // never fails: crypto/rand.Read aborts the program instead.
	return base64.RawURLEncoding.EncodeToString(b)
}

// wireClaims is the JSON payload. Times are integer seconds so a fractional
// or out-of-range value is malformed rather than silently rounded.
type wireClaims struct {
	Issuer    string `json:"iss"`
	Audience  string `json:"aud"`
	Subject   string `json:"sub"`
	IssuedAt  int64  `json:"iat"`
	Expiry    int64  `json:"exp"`
	SessionID string `json:"sid"`
	AuthTime  int64  `json:"auth_time"`
	// Epoch is a pointer so that a missing epoch is rejected instead of
	// reading as epoch 0.
	Epoch  *int64 `json:"epoch"`
	Origin string `json:"origin,omitempty"`
	ID     string `json:"jti,omitempty"`
}

var _ gojwt.Claims = (*wireClaims)(nil)

func toWire(c Claims, iss, aud string) *wireClaims {
	epoch := c.Epoch
	return &wireClaims{
		Issuer:    iss,
		Audience:  aud,
		Subject:   c.User,
		IssuedAt:  c.IssuedAt.Unix(),
		Expiry:    c.Expiry.Unix(),
		SessionID: c.SessionID,
		AuthTime:  c.AuthTime.Unix(),
		Epoch:     &epoch,
		Origin:    c.Origin,
		ID:        c.ID,
	}
}

func (w *wireClaims) claims() Claims {
	return Claims{
		User:      w.Subject,
		SessionID: w.SessionID,
		IssuedAt:  time.Unix(w.IssuedAt, 0),
		Expiry:    time.Unix(w.Expiry, 0),
		AuthTime:  time.Unix(w.AuthTime, 0),
		Epoch:     *w.Epoch,
		Origin:    w.Origin,
		ID:        w.ID,
	}
}

// numericDate maps 0 (absent) to nil, which gojwt treats as a missing claim.
func numericDate(sec int64) *gojwt.NumericDate {
	if sec == 0 {
		return nil
	}
	return gojwt.NewNumericDate(time.Unix(sec, 0))
}

// The gojwt.Claims getters. nbf is never issued, so it is never read.

func (w *wireClaims) GetExpirationTime() (*gojwt.NumericDate, error) {
	return numericDate(w.Expiry), nil
}

func (w *wireClaims) GetIssuedAt() (*gojwt.NumericDate, error) {
	return numericDate(w.IssuedAt), nil
}

func (w *wireClaims) GetNotBefore() (*gojwt.NumericDate, error) { return nil, nil }

func (w *wireClaims) GetIssuer() (string, error) { return w.Issuer, nil }

func (w *wireClaims) GetSubject() (string, error) { return w.Subject, nil }

func (w *wireClaims) GetAudience() (gojwt.ClaimStrings, error) {
	return gojwt.ClaimStrings{w.Audience}, nil
}

// Validate implements gojwt.ClaimsValidator: the claims every session token
// carries. gojwt itself checks exp, iat, iss and aud.
func (w *wireClaims) Validate() error {
	var errs []error
	for _, c := range []struct {
		name    string
		missing bool
	}{
		{"sub", w.Subject == ""}, {"sid", w.SessionID == ""}, {"iat", w.IssuedAt == 0},
		{"auth_time", w.AuthTime == 0}, {"epoch", w.Epoch == nil},
	} {
		if c.missing {
			errs = append(errs, fmt.Errorf("%w: %s", gojwt.ErrTokenRequiredClaimMissing, c.name))
		}
	}
	return errors.Join(errs...)
}
