package jwt

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"time"

	gojwt "github.com/golang-jwt/jwt/v5"
	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/sandgate/sandgate/internal/defaults"
)

const (
	// maxLeeway is the largest clock skew a Verifier may tolerate.
	maxLeeway = 30 * time.Second
	// maxTokenLen caps the token size before any parsing; our tokens are
	// about 400 bytes.
	maxTokenLen = 4 << 10
	// defaultCacheSize is the number of verified tokens kept when
	// VerifierOptions.CacheSize is zero.
	defaultCacheSize = 4096
)

// KeySource looks up the public key a token's kid names. An unknown kid is
// an error wrapping ErrUnknownKey.
type KeySource interface {
	PublicKey(kid string) (ed25519.PublicKey, error)
}

var (
	_ KeySource = KeySet(nil)
	_ KeySource = (*JWKSFetcher)(nil)
	_ KeySource = (*KeyRing)(nil)
)

// VerifierOptions configures a Verifier.
type VerifierOptions struct {
	// Keys resolves kids to public keys. Required.
	Keys KeySource
	// Issuer is the required iss claim. Required.
	Issuer string
	// Audience is the required aud claim. Required.
	Audience string
	// Leeway is the clock skew tolerated on exp and iat, at most 30 s.
	Leeway time.Duration
	// CacheSize is how many verified tokens to remember; zero means 4096 and
	// a negative value disables the cache.
	CacheSize int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Validate reports every problem with o at once and changes nothing.
func (o VerifierOptions) Validate() error {
	var errs []error
	if o.Keys == nil {
		errs = append(errs, errors.New("verifier: key source is required"))
	}
	if o.Issuer == "" {
		errs = append(errs, errors.New("verifier: issuer is required"))
	}
	if o.Audience == "" {
		errs = append(errs, errors.New("verifier: audience is required"))
	}
	if o.Leeway < 0 || o.Leeway > maxLeeway {
		errs = append(errs, fmt.Errorf("verifier: leeway %v outside 0 to %v", o.Leeway, maxLeeway))
	}
	return errors.Join(errs...)
}

// Verifier checks session tokens offline. It is safe for concurrent use.
//
// Verified tokens are cached until they expire, so a repeat costs two map
// lookups and no cryptography. A cached token holds only while its kid
// still names the key that verified it: a key reset after a leak ends the
// old keys' tokens as soon as the key source drops them.
type Verifier struct {
	opts   VerifierOptions
	parser *gojwt.Parser
	cache  *lru.Cache[string, verified] // nil when disabled
}

// verified is a cached token's claims and the key that verified them.
type verified struct {
	claims Claims
	kid    string
	key    ed25519.PublicKey
}

// NewVerifier validates opts, fills defaults and returns a Verifier.
func NewVerifier(opts VerifierOptions) (*Verifier, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	defaults.Clock(&opts.Now)
	if opts.CacheSize == 0 {
		opts.CacheSize = defaultCacheSize
	}
	v := &Verifier{opts: opts}
	if opts.CacheSize > 0 {
		c, err := lru.New[string, verified](opts.CacheSize)
		if err != nil {
			return nil, fmt.Errorf("verifier: create cache: %w", err)
		}
		v.cache = c
	}
	v.parser = gojwt.NewParser(
		gojwt.WithValidMethods([]string{gojwt.SigningMethodEdDSA.Alg()}),
		gojwt.WithStrictDecoding(),
		gojwt.WithIssuer(opts.Issuer),
		gojwt.WithAudience(opts.Audience),
		gojwt.WithExpirationRequired(),
		gojwt.WithIssuedAt(),
		gojwt.WithLeeway(opts.Leeway),
		gojwt.WithTimeFunc(opts.Now),
	)
	return v, nil
}

// Verify checks token and returns its claims. A rejection wraps exactly one
// of ErrMalformed, ErrBadSignature, ErrUnknownKey, ErrExpired or ErrClaims.
// Revocation (Claims.Epoch, Claims.SessionID) is left to the caller.
func (v *Verifier) Verify(token string) (Claims, error) {
	if len(token) > maxTokenLen {
		return Claims{}, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, maxTokenLen)
	}
	if v.cache != nil {
		if e, ok := v.cache.Get(token); ok {
			switch {
			case !v.stillSigned(e):
				v.cache.Remove(token) // verified again below, against the keys as they are
			case !v.opts.Now().Before(e.claims.Expiry.Add(v.opts.Leeway)):
				v.cache.Remove(token)
				return Claims{}, fmt.Errorf("%w: cached token", ErrExpired)
			default:
				return e.claims, nil
			}
		}
	}
	var (
		w  wireClaims
		by verified
	)
	keyFor := func(t *gojwt.Token) (any, error) {
		key, err := v.keyFor(t)
		if err == nil {
			by.kid, by.key = t.Header["kid"].(string), key.(ed25519.PublicKey)
		}
		return key, err
	}
	if _, err := v.parser.ParseWithClaims(token, &w, keyFor); err != nil {
		return Claims{}, classify(err)
	}
	by.claims = w.claims()
	if v.cache != nil {
		// Clone: the caller's string may alias a reused request buffer.
		v.cache.Add(strings.Clone(token), by)
	}
	return by.claims, nil
}

// stillSigned reports whether a cached token's kid still names the key
// that verified it.
func (v *Verifier) stillSigned(e verified) bool {
	key, err := v.opts.Keys.PublicKey(e.kid)
	return err == nil && key.Equal(e.key)
}

// VerifyIgnoringExpiry checks token like Verify but also accepts one whose
// only fault is an exp in the past: signature, kid, iss, aud, iat and the
// required claims must all be good. It is for renewal, so the caller must
// bound how old a token it renews (Claims.AuthTime plus the session's
// maximum age) and check revocation. A rejection wraps exactly one of
// ErrMalformed, ErrBadSignature, ErrUnknownKey or ErrClaims.
func (v *Verifier) VerifyIgnoringExpiry(token string) (Claims, error) {
	c, err := v.Verify(token)
	if !errors.Is(err, ErrExpired) {
		return c, err
	}
	var w wireClaims
	if _, err := v.parser.ParseWithClaims(token, &w, v.keyFor); err != nil {
		if err := classify(err); !errors.Is(err, ErrExpired) {
			return Claims{}, err
		}
	}
	// ErrExpired is only ever chosen when every other check passed, so the
	// signature is good and w is complete.
	return w.claims(), nil
}

// keyFor is the gojwt key function; gojwt has already pinned alg to EdDSA.
func (v *Verifier) keyFor(t *gojwt.Token) (any, error) {
	if _, ok := t.Header["crit"]; ok {
		return nil, fmt.Errorf("%w: crit header not supported", ErrMalformed)
	}
	kid, ok := t.Header["kid"].(string)
	if !ok {
		return nil, fmt.Errorf("%w: missing kid", ErrMalformed)
	}
	if !validKID(kid) {
		return nil, fmt.Errorf("%w: invalid kid", ErrUnknownKey)
	}
	key, err := v.opts.Keys.PublicKey(kid)
	if err != nil {
		if errors.Is(err, ErrUnknownKey) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %w", ErrUnknownKey, err)
	}
	if len(key) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: kid %q has no usable key", ErrUnknownKey, kid)
	}
	return key, nil
}

// claimErrors are the claim failures that make a token ErrClaims even when
// it is also expired.
var claimErrors = []error{
	gojwt.ErrTokenInvalidIssuer,
	gojwt.ErrTokenInvalidAudience,
	gojwt.ErrTokenUsedBeforeIssued,
	gojwt.ErrTokenRequiredClaimMissing,
	gojwt.ErrTokenNotValidYet,
}

// classify maps a gojwt error onto exactly one of our sentinels. Errors from
// keyFor already carry theirs.
func classify(err error) error {
	switch {
	case errors.Is(err, ErrMalformed), errors.Is(err, ErrUnknownKey):
		return fmt.Errorf("verify token: %w", err)
	case errors.Is(err, gojwt.ErrTokenMalformed):
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	case errors.Is(err, gojwt.ErrTokenSignatureInvalid), errors.Is(err, gojwt.ErrTokenUnverifiable):
		return fmt.Errorf("%w: %w", ErrBadSignature, err)
	case errors.Is(err, gojwt.ErrTokenInvalidClaims):
		for _, ce := range claimErrors {
			if errors.Is(err, ce) {
				return fmt.Errorf("%w: %w", ErrClaims, err)
			}
		}
		if errors.Is(err, gojwt.ErrTokenExpired) {
			return fmt.Errorf("%w: %w", ErrExpired, err)
		}
		return fmt.Errorf("%w: %w", ErrClaims, err)
	default:
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
}
