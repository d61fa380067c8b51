package jwt

import (
	"errors"
	"fmt"
	"time"

	gojwt "github.com/golang-jwt/jwt/v5"

	"github.com/sandgate/sandgate/internal/defaults"
)

// defaultLifetime is the token lifetime when SignerOptions.Lifetime is zero.
const defaultLifetime = 10 * time.Minute

// SignerOptions configures a Signer.
type SignerOptions struct {
	// KeyRing supplies the signing key; its newest key signs. Required.
	KeyRing *KeyRing
	// Issuer is the iss claim. Required.
	Issuer string
	// Audience is the aud claim. Required.
	Audience string
	// Lifetime is exp minus iat; zero means 10 minutes.
	Lifetime time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Validate reports every problem with o at once and changes nothing.
func (o SignerOptions) Validate() error {
	var errs []error
	if o.KeyRing == nil {
		errs = append(errs, errors.New("signer: key ring is required"))
	}
	if o.Issuer == "" {
		errs = append(errs, errors.New("signer: issuer is required"))
	}
	if o.Audience == "" {
		errs = append(errs, errors.New("signer: audience is required"))
	}
	if o.Lifetime < 0 {
		errs = append(errs, fmt.Errorf("signer: lifetime %v is negative", o.Lifetime))
	}
	return errors.Join(errs...)
}

// Signer issues session tokens. It is safe for concurrent use and follows
// rotations of its KeyRing, signing with the key active at its clock's now. To switch to a ring loaded from storage, build a
// new Signer; it is cheap.
type Signer struct {
	opts SignerOptions
}

// NewSigner validates opts, fills defaults and returns a Signer.
func NewSigner(opts SignerOptions) (*Signer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Lifetime == 0 {
		opts.Lifetime = defaultLifetime
	}
	defaults.Clock(&opts.Now)
	return &Signer{opts: opts}, nil
}

// WithAudience returns a Signer on the same keys and issuer for another
// kind of token: another aud and lifetime (zero keeps the lifetime).
func (s *Signer) WithAudience(aud string, lifetime time.Duration) (*Signer, error) {
	o := s.opts
	o.Audience = aud
	if lifetime != 0 {
		o.Lifetime = lifetime
	}
	return NewSigner(o)
}

// Sign returns a signed token for c. It sets IssuedAt to now and Expiry to
// now plus the lifetime, ignoring the values in c. An empty SessionID gets a
// fresh random one (a new login); a zero AuthTime becomes now. Renewals pass
// the SessionID and AuthTime of the token they replace.
func (s *Signer) Sign(c Claims) (string, error) {
	tok, _, err := s.Issue(c)
	return tok, err
}

// Issue is Sign that also returns the claims exactly as signed, for callers
// that need the session id, expiry or auth time of the token they hand out.
func (s *Signer) Issue(c Claims) (string, Claims, error) {
	if c.User == "" {
		return "", Claims{}, errors.New("sign token: user is required")
	}
	now := s.opts.Now().Truncate(time.Second)
	c.IssuedAt = now
	c.Expiry = now.Add(s.opts.Lifetime)
	if c.SessionID == "" {
		c.SessionID = newSessionID()
	}
	if c.AuthTime.IsZero() {
		c.AuthTime = now
	}
	if c.AuthTime.Unix() <= 0 {
		return "", Claims{}, errors.New("sign token: auth time must be after 1970")
	}
	key := s.opts.KeyRing.signingKeyAt(now)
	w := toWire(c, s.opts.Issuer, s.opts.Audience)
	tok := gojwt.NewWithClaims(gojwt.SigningMethodEdDSA, w)
	tok.Header["kid"] = key.id
	signed, err := tok.SignedString(key.priv)
	if err != nil {
		return "", Claims{}, fmt.Errorf("sign token: %w", err)
	}
	return signed, w.claims(), nil
}
