package jwt

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
)

// KeyRing holds the auth API's Ed25519 signing keys in activation order. The
// newest key whose activation time has come signs; a staged key (activation
// still ahead) is published but does not sign yet; older keys stay only so
// their tokens keep verifying. A KeyRing is safe for concurrent use.
type KeyRing struct {
	mu   sync.RWMutex
	keys []ringKey // never empty; sorted by active
}

type ringKey struct {
	id      string
	created time.Time
	active  time.Time // signs from then until its successor's active
	priv    ed25519.PrivateKey
}

// KeyInfo describes one key of a ring, without its private half.
type KeyInfo struct {
	// KID names the key in token headers and the JWKS.
	KID string
	// Created is when the key was generated.
	Created time.Time
	// Active is when the key starts signing; it signs until the next key's
	// Active.
	Active time.Time
}

// kidBytes is 96 bits, encoded as 16 base64url characters.
const kidBytes = 12

// maxKIDLen bounds kids we accept from a JWKS or a token header.
const maxKIDLen = 64

func newRingKey(now time.Time) ringKey {
	id := make([]byte, kidBytes)
	seed := make([]byte, ed25519.SeedSize)
	rand.Read(id) // never fails: crypto/rand.Read aborts the program instead.
	rand.Read(seed)
	created := now.UTC().Truncate(time.Second)
	return ringKey{
		id:      base64.RawURLEncoding.EncodeToString(id),
		created: created,
		active:  created,
		priv:    ed25519.NewKeyFromSeed(seed),
	}
}

// validKID reports whether kid is 1 to 64 base64url alphabet characters.
func validKID(kid string) bool {
	if kid == "" || len(kid) > maxKIDLen {
		return false
	}
	for i := 0; i < len(kid); i++ {
		c := kid[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// NewKeyRing returns a ring with one fresh signing key created at now.
func NewKeyRing(now time.Time) *KeyRing {
	return &KeyRing{keys: []ringKey{newRingKey(now)}}
}

// Rotate adds a fresh key created at now, which signs from then on, and
// returns its kid.
func (r *KeyRing) Rotate(now time.Time) string { return r.Stage(now, now) }

// Stage adds a fresh key created at now that starts signing at activate and
// returns its kid. Until then the key is only published, so verifiers that
// refresh their JWKS in the meantime know it before the first token it signs
// reaches them. An activate before the newest key's is moved up to it, so
// keys stay in activation order.
func (r *KeyRing) Stage(now, activate time.Time) string {
	k := newRingKey(now)
	r.mu.Lock()
	defer r.mu.Unlock()
	k.active = activate.UTC().Truncate(time.Second)
	if last := r.keys[len(r.keys)-1].active; k.active.Before(last) {
		k.active = last
	}
	r.keys = append(r.keys, k)
	return k.id
}

// Prune drops every key that stopped signing more than keep before now and
// returns how many it dropped. A key stops signing when its successor
// becomes active, so measuring from then (rather than from the key's own
// creation) keeps a key that rotated late. keep must cover the longest time
// a token may still be verified after it was signed: the token lifetime for
// plain verification, plus the time other replicas take to load the rotated
// ring, or the session's maximum age when expired tokens are renewed. The
// signing key and staged keys are never dropped.
func (r *KeyRing) Prune(now time.Time, keep time.Duration) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := make([]ringKey, 0, len(r.keys))
	for i, k := range r.keys {
		if retiredWithin(r.keys, i, now, keep) {
			kept = append(kept, k)
		}
	}
	dropped := len(r.keys) - len(kept)
	r.keys = kept
	return dropped
}

// retiredWithin reports whether keys[i] still signs at now, is staged, or
// stopped signing no more than d before now.
func retiredWithin(keys []ringKey, i int, now time.Time, d time.Duration) bool {
	return i == len(keys)-1 || !keys[i+1].active.Before(now.Add(-d))
}

// signingKeyAt returns the key that signs at now: the newest key already
// active, or the oldest key when none is (a ring staged ahead of a clock).
func (r *KeyRing) signingKeyAt(now time.Time) ringKey {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for i := len(r.keys) - 1; i > 0; i-- {
		if !r.keys[i].active.After(now) {
			return r.keys[i]
		}
	}
	return r.keys[0]
}

// snapshot returns a copy of the keys, in activation order.
func (r *KeyRing) snapshot() []ringKey {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]ringKey(nil), r.keys...)
}

// Keys describes the ring's keys in activation order.
func (r *KeyRing) Keys() []KeyInfo {
	keys := r.snapshot()
	out := make([]KeyInfo, len(keys))
	for i, k := range keys {
		out[i] = KeyInfo{KID: k.id, Created: k.created, Active: k.active}
	}
	return out
}

// SigningKID returns the kid of the key that signs at now.
func (r *KeyRing) SigningKID(now time.Time) string { return r.signingKeyAt(now).id }

// PublicKey returns the public half of the ring key named kid, or an error
// wrapping ErrUnknownKey, so a ring is itself a KeySource: the auth API
// verifies with every key it still holds.
func (r *KeyRing) PublicKey(kid string) (ed25519.PublicKey, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, k := range r.keys {
		if k.id == kid {
			return k.priv.Public().(ed25519.PublicKey), nil
		}
	}
	return nil, fmt.Errorf("%w: kid %q", ErrUnknownKey, kid)
}

// keyRingJSON is the storage format: private keys as base64url Ed25519 seeds.
type keyRingJSON struct {
	Keys []storedKeyJSON `json:"keys"`
}

type storedKeyJSON struct {
	KID     string    `json:"kid"`
	Created time.Time `json:"created"`
	// Active is absent in rings written before keys could be staged; it
	// then defaults to Created.
	Active *time.Time `json:"active,omitempty"`
	Seed   string     `json:"seed"`
}

// Marshal encodes the ring, private keys included, for storage in a Secret.
func (r *KeyRing) Marshal() ([]byte, error) {
	var out keyRingJSON
	for _, k := range r.snapshot() {
		active := k.active
		out.Keys = append(out.Keys, storedKeyJSON{
			KID:     k.id,
			Created: k.created,
			Active:  &active,
			Seed:    base64.RawURLEncoding.EncodeToString(k.priv.Seed()),
		})
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("marshal key ring: %w", err)
	}
	return b, nil
}

// UnmarshalKeyRing decodes a ring written by Marshal. It rejects unknown
// fields, trailing data, an empty ring, bad kids, duplicate kids, missing
// creation times and seeds that are not 32 bytes of base64url, and reports
// every bad key at once. Keys are put in activation order.
func UnmarshalKeyRing(data []byte) (*KeyRing, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var in keyRingJSON
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("parse key ring: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("parse key ring: trailing data after JSON object")
	}
	if len(in.Keys) == 0 {
		return nil, errors.New("parse key ring: no keys")
	}
	var errs []error
	seen := make(map[string]bool, len(in.Keys))
	ring := &KeyRing{keys: make([]ringKey, 0, len(in.Keys))}
	for i, sk := range in.Keys {
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("parse key ring: key %d: "+format, append([]any{i}, args...)...))
		}
		switch {
		case !validKID(sk.KID):
			bad("kid must be 1 to %d base64url characters", maxKIDLen)
		case seen[sk.KID]:
			bad("duplicate kid %q", sk.KID)
		}
		seen[sk.KID] = true
		if sk.Created.IsZero() {
			bad("missing created time")
		}
		seed, err := base64.RawURLEncoding.Strict().DecodeString(sk.Seed)
		if err != nil {
			bad("seed is not unpadded base64url: %w", err)
			continue
		}
		if len(seed) != ed25519.SeedSize {
			bad("seed is %d bytes, want %d", len(seed), ed25519.SeedSize)
			continue
		}
		active := sk.Created
		if sk.Active != nil {
			active = *sk.Active
		}
		ring.keys = append(ring.keys, ringKey{id: sk.KID, created: sk.Created, active: active, priv: ed25519.NewKeyFromSeed(seed)})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortStableFunc(ring.keys, func(a, b ringKey) int { return a.active.Compare(b.active) })
	return ring, nil
}
