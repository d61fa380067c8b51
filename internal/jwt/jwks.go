package jwt

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// maxJWKSKeys bounds how many keys a JWKS may list.
const maxJWKSKeys = 64

// jwk is one JSON Web Key (RFC 7517, RFC 8037 for OKP).
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv,omitempty"`
	X   string `json:"x,omitempty"`
	D   string `json:"d,omitempty"`
	KID string `json:"kid,omitempty"`
	Alg string `json:"alg,omitempty"`
	Use string `json:"use,omitempty"`
}

type jwkSet struct {
	Keys []jwk `json:"keys"`
}

// JWKS returns all of the ring's public keys as a JWKS document, in
// activation order.
func (r *KeyRing) JWKS() ([]byte, error) {
	return marshalJWKS(r.snapshot())
}

// JWKSAt returns the JWKS to serve at /.well-known/jwks.json at now: staged
// keys, the signing key, and keys that stopped signing no more than retired
// before now. retired should be the token lifetime plus leeway and the
// replicas' propagation time, so every unexpired token stays verifiable
// while a ring that keeps older keys for renewal does not publish them.
func (r *KeyRing) JWKSAt(now time.Time, retired time.Duration) ([]byte, error) {
	keys := r.snapshot()
	var out []ringKey
	for i, k := range keys {
		if retiredWithin(keys, i, now, retired) {
			out = append(out, k)
		}
	}
	return marshalJWKS(out)
}

func marshalJWKS(keys []ringKey) ([]byte, error) {
	set := jwkSet{Keys: []jwk{}}
	for _, k := range keys {
		set.Keys = append(set.Keys, jwk{
			Kty: "OKP",
			Crv: "Ed25519",
			X:   base64.RawURLEncoding.EncodeToString(k.priv.Public().(ed25519.PublicKey)),
			KID: k.id,
			Alg: "EdDSA",
			Use: "sig",
		})
	}
	b, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("marshal jwks: %w", err)
	}
	return b, nil
}

// JWKSVersion names a JWKS document by its content: the first 16 bytes of
// its SHA-256, in hex. The auth API's JWKS is the same document on every
// replica that holds the same ring, so a node proxy compares the version an
// auth API names with the version of the document it fetched.
func JWKSVersion(doc []byte) string {
	sum := sha256.Sum256(doc)
	return hex.EncodeToString(sum[:16])
}

// KeySet maps kid to an Ed25519 public key. It is a static KeySource for
// tests and one-shot tools such as `jwt inspect --key-file`.
type KeySet map[string]ed25519.PublicKey

// PublicKey returns the key named kid, or an error wrapping ErrUnknownKey.
func (s KeySet) PublicKey(kid string) (ed25519.PublicKey, error) {
	if k, ok := s[kid]; ok {
		return k, nil
	}
	return nil, fmt.Errorf("%w: kid %q", ErrUnknownKey, kid)
}

// ParseJWKS reads a JWKS document and returns its Ed25519 signing keys.
// Keys of another kty or curve, or marked for a use other than sig, are
// skipped. An Ed25519 key is an error when its kid is missing, invalid or
// duplicated, its x is not unpadded base64url of 32 bytes, its alg is
// neither EdDSA nor Ed25519, or it carries private material (d). A document
// with no usable key is an error, so a bad fetch never empties a key set.
func ParseJWKS(data []byte) (KeySet, error) {
	var set struct {
		Keys *[]json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("parse jwks: %w", err)
	}
	if set.Keys == nil {
		return nil, errors.New("parse jwks: no keys member")
	}
	if len(*set.Keys) > maxJWKSKeys {
		return nil, fmt.Errorf("parse jwks: %d keys, at most %d allowed", len(*set.Keys), maxJWKSKeys)
	}
	keys := make(KeySet, len(*set.Keys))
	for i, raw := range *set.Keys {
		var k jwk
		if err := json.Unmarshal(raw, &k); err != nil {
			return nil, fmt.Errorf("parse jwks: key %d: %w", i, err)
		}
		if k.Kty != "OKP" || k.Crv != "Ed25519" || (k.Use != "" && k.Use != "sig") {
			continue
		}
		pub, err := parseEd25519JWK(k)
		if err != nil {
			return nil, fmt.Errorf("parse jwks: key %d: %w", i, err)
		}
		if _, dup := keys[k.KID]; dup {
			return nil, fmt.Errorf("parse jwks: key %d: duplicate kid %q", i, k.KID)
		}
		keys[k.KID] = pub
	}
	if len(keys) == 0 {
		return nil, errors.New("parse jwks: no Ed25519 signing keys")
	}
	return keys, nil
}

func parseEd25519JWK(k jwk) (ed25519.PublicKey, error) {
	if !validKID(k.KID) {
		return nil, fmt.Errorf("kid must be 1 to %d base64url characters", maxKIDLen)
	}
	if k.Alg != "" && k.Alg != "EdDSA" && k.Alg != "Ed25519" {
		return nil, fmt.Errorf("kid %q: alg %q is not EdDSA", k.KID, k.Alg)
	}
	if k.D != "" {
		return nil, fmt.Errorf("kid %q: private key material (d) in a public key set", k.KID)
	}
	x, err := base64.RawURLEncoding.Strict().DecodeString(k.X)
	if err != nil {
		return nil, fmt.Errorf("kid %q: x is not unpadded base64url: %w", k.KID, err)
	}
	if len(x) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("kid %q: x is %d bytes, want %d", k.KID, len(x), ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(x), nil
}
