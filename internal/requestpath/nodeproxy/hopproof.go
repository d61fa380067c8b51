package nodeproxy

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// hopAuthHeader carries a hop's proof that its sender holds the hop key:
// "v1.<unix seconds>.<nonce>.<HMAC-SHA256>", nonce and MAC base64url
// without padding.
const hopAuthHeader = "X-Sandgate-Hop-Auth"

// MinHopKeyBytes is the shortest hop key accepted.
const MinHopKeyBytes = 32

const (
	hopAuthVersion = "v1"
	// hopAuthWindow is how far a hop's timestamp may be from the
	// receiver's clock, either way.
	hopAuthWindow = 30 * time.Second
	hopNonceBytes = 16
	// hopNonces bounds the nonces remembered against replays.
	hopNonces = 1 << 17
)

// Why a hop's proof was refused; the log names the reason.
var (
	errHopMalformed = errors.New("malformed hop proof")
	errHopStale     = errors.New("hop proof outside the time window")
	errHopForged    = errors.New("hop proof does not match the request")
	errHopReplayed  = errors.New("hop proof already used")
)

// hopClaim is what a hop's MAC covers: the request as the receiver sees
// it, the two nodes, and the forwarded headers the proof makes trusted.
type hopClaim struct {
	method, uri, host, user string
	from, to                string // the sending and the receiving node
	xff, proto, fwdHost     string
}

// hopProof is a parsed X-Sandgate-Hop-Auth value.
type hopProof struct {
	ts    int64
	nonce [hopNonceBytes]byte
	mac   [sha256.Size]byte
}

var b64 = base64.RawURLEncoding

// parseHopProof parses an X-Sandgate-Hop-Auth value strictly: exactly one
// form is accepted for each proof.
func parseHopProof(v string) (hopProof, error) {
	var p hopProof
	parts := strings.Split(v, ".")
	if len(parts) != 4 || parts[0] != hopAuthVersion {
		return p, errHopMalformed
	}
	ts, nonce, mac := parts[1], parts[2], parts[3]
	if ts == "" || len(ts) > 19 || (len(ts) > 1 && ts[0] == '0') || strings.TrimLeft(ts, "0123456789") != "" {
		return p, errHopMalformed
	}
	var err error
	if p.ts, err = strconv.ParseInt(ts, 10, 64); err != nil {
		return p, errHopMalformed
	}
	if !decodeExact(p.nonce[:], nonce) || !decodeExact(p.mac[:], mac) {
		return p, errHopMalformed
	}
	return p, nil
}

// decodeExact decodes s into all of dst, refusing any other length and
// non-canonical encodings.
func decodeExact(dst []byte, s string) bool {
	if len(s) != b64.EncodedLen(len(dst)) {
		return false
	}
	n, err := b64.Strict().Decode(dst, []byte(s))
	return err == nil && n == len(dst)
}

func (p hopProof) String() string {
	return hopAuthVersion + "." + strconv.FormatInt(p.ts, 10) + "." + b64.EncodeToString(p.nonce[:]) + "." + b64.EncodeToString(p.mac[:])
}

// hopAuth signs outgoing hops and verifies incoming ones with the key all
// node proxies share. It is safe for concurrent use.
type hopAuth struct {
	key      []byte
	now      func() time.Time
	capacity int // nonces remembered

	mu   sync.Mutex
	seen *simplelru.LRU[[hopNonceBytes]byte, int64] // nonce -> timestamp
	// floor is the newest timestamp of a nonce forgotten while its proof
	// was still inside the window: proofs up to it could be replays.
	floor int64
}

func newHopAuth(key []byte, now func() time.Time, capacity int) *hopAuth {
	return &hopAuth{key: key, now: now, capacity: capacity, seen: must(simplelru.NewLRU[[hopNonceBytes]byte, int64](capacity, nil))}
}

// sign returns the proof for a hop of c.
func (a *hopAuth) sign(c hopClaim) string {
	p := hopProof{ts: a.now().Unix()}
	rand.Read(p.nonce[:])
	p.mac = a.mac(c, p.ts, p.nonce)
	return p.String()
}

// verify checks the proof v of a hop of c: well formed, fresh, made with
// the key for this request, and not seen before.
func (a *hopAuth) verify(v string, c hopClaim) error {
	p, err := parseHopProof(v)
	if err != nil {
		return err
	}
	now := a.now().Unix()
	window := int64(hopAuthWindow / time.Second)
	if p.ts < now-window || p.ts > now+window {
		return errHopStale
	}
	want := a.mac(c, p.ts, p.nonce)
	if !hmac.Equal(p.mac[:], want[:]) {
		return errHopForged
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.seen.Contains(p.nonce) || p.ts <= a.floor {
		return errHopReplayed
	}
	if a.seen.Len() >= a.capacity {
		if _, ts, ok := a.seen.RemoveOldest(); ok && ts >= now-window {
			a.floor = max(a.floor, ts)
		}
	}
	a.seen.Add(p.nonce, p.ts)
	return nil
}

// mac is HMAC-SHA256 over the version, every claim field (each preceded
// by its length, so no two claims encode alike), the timestamp and the
// nonce.
func (a *hopAuth) mac(c hopClaim, ts int64, nonce [hopNonceBytes]byte) [sha256.Size]byte {
	h := hmac.New(sha256.New, a.key)
	var buf []byte
	for _, f := range []string{hopAuthVersion, c.method, c.uri, c.host, c.user, c.from, c.to, c.xff, c.proto, c.fwdHost} {
		buf = binary.AppendUvarint(buf, uint64(len(f)))
		buf = append(buf, f...)
	}
	buf = binary.BigEndian.AppendUint64(buf, uint64(ts))
	buf = append(buf, nonce[:]...)
	h.Write(buf)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}
