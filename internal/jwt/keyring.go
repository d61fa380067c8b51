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
	"sync"
	"time"
)

// KeyRing holds the auth API's Ed25519 signing keys, oldest first. The newest
// key signs; older keys stay only so their tokens keep verifying. A KeyRing
// is safe for concurrent use.
type KeyRing struct {
	mu   sync.RWMutex
	keys []ringKey // never empty; the last key signs
}

type ringKey struct {
	id      string
	created time.Time
	priv    ed25519.PrivateKey
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
	return ringKey{
		id:      base64.RawURLEncoding.EncodeToString(id),
		created: now.UTC().Truncate(time.Second),
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
func (r *KeyRing) Rotate(now time.Time) string {
	k := newRingKey(now)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, k)
	return k.id
}

// Prune drops every key that stopped signing more than keep before now and
// returns how many it dropped. A key stops signing when its successor is
// created, so measuring from then (rather than from the key's own creation)
// keeps a key that rotated late. keep must cover the longest token lifetime
// plus the time other replicas take to load the rotated ring; the rotation
// period plus the token lifetime is a safe choice. The signing key is never
// dropped.
func (r *KeyRing) Prune(now time.Time, keep time.Duration) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	cutoff := now.Add(-keep)
	kept := make([]ringKey, 0, len(r.keys))
	for i, k := range r.keys {
		if i == len(r.keys)-1 || !r.keys[i+1].created.Before(cutoff) {
			kept = append(kept, k)
		}
	}
	dropped := len(r.keys) - len(kept)
	r.keys = kept
	return dropped
}

// signingKey returns the key that signs now.
func (r *KeyRing) signingKey() ringKey {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.keys[len(r.keys)-1]
}

// snapshot returns a copy of the keys, oldest first.
func (r *KeyRing) snapshot() []ringKey {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]ringKey(nil), r.keys...)
}

// keyRingJSON is the storage format: private keys as base64url Ed25519 seeds.
type keyRingJSON struct {
	Keys []storedKeyJSON `json:"keys"`
}

type storedKeyJSON struct {
	KID     string    `json:"kid"`
	Created time.Time `json:"created"`
	Seed    string    `json:"seed"`
}

// Marshal encodes the ring, private keys included, for storage in a Secret.
func (r *KeyRing) Marshal() ([]byte, error) {
	var out keyRingJSON
	for _, k := range r.snapshot() {
		out.Keys = append(out.Keys, storedKeyJSON{
			KID:     k.id,
			Created: k.created,
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
// every bad key at once.
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
		ring.keys = append(ring.keys, ringKey{id: sk.KID, created: sk.Created, priv: ed25519.NewKeyFromSeed(seed)})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ring, nil
}
