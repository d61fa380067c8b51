package handshake

import (
	"crypto/sha256"

	lru "github.com/hashicorp/golang-lru/v2"
)

// refusedCacheSize bounds the remembered refused tokens of all pods.
const refusedCacheSize = 4096

// refusedKey names a token a pod's app refused, by digest: the token
// itself is not kept.
type refusedKey struct {
	podUID string
	digest [sha256.Size]byte
}

// refusedTokens remembers the tokens each pod's app answered 401 to, so a
// token planted in the logs costs one exchange, not one per request. Safe
// for concurrent use.
type refusedTokens struct {
	lru *lru.Cache[refusedKey, struct{}]
}

func newRefusedTokens(size int) (*refusedTokens, error) {
	c, err := lru.New[refusedKey, struct{}](size)
	if err != nil {
		return nil, err
	}
	return &refusedTokens{lru: c}, nil
}

func keyOf(podUID, token string) refusedKey {
	return refusedKey{podUID: podUID, digest: sha256.Sum256([]byte(token))}
}

func (r *refusedTokens) add(podUID, token string) { r.lru.Add(keyOf(podUID, token), struct{}{}) }

func (r *refusedTokens) has(podUID, token string) bool {
	_, ok := r.lru.Get(keyOf(podUID, token))
	return ok
}

// forgetPod drops the pod's entries; its UID will not come back.
func (r *refusedTokens) forgetPod(podUID string) {
	for _, k := range r.lru.Keys() {
		if k.podUID == podUID {
			r.lru.Remove(k)
		}
	}
}
