package account

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// Labels and annotations on a claim the auth API manages. The managed-by key
// and value are the seed gateway's, so claims it created stay recognised.
const (
	LabelManagedBy = "aaas.example.com/managed-by"
	ManagedByValue = "dsh-gateway"
	// LabelUser carries the user name on the claim.
	LabelUser = "aaas.example.com/user"
	// PodLabelUser carries the user name on the pod, through
	// additionalPodMetadata, in the domain the controller allows.
	PodLabelUser = extensions.UserLabelDomain + "/user"
	// AnnotationTokenHash is the hex SHA-256 of the user's bearer token.
	AnnotationTokenHash = "aaas.example.com/token-sha256"
	// AnnotationSessionEpoch is the lowest session epoch still accepted.
	AnnotationSessionEpoch = "sandgate.io/session-epoch"
	// AnnotationRevokedSessions lists revoked session ids with their expiry.
	AnnotationRevokedSessions = "sandgate.io/revoked-sessions"
	// AnnotationUsedEntryCodes lists the redeemed, unexpired entry codes of
	// subdomain routing ("<jti>:<unix exp>,..."), so each is used once
	// whichever auth API replica redeems it.
	AnnotationUsedEntryCodes = "sandgate.io/used-entry-codes"
	// AnnotationKeepAwakeUntil is when the owner's "keep awake" from the
	// account page ends (RFC 3339, UTC); the idle rule does not suspend
	// the agent before it.
	AnnotationKeepAwakeUntil = "sandgate.io/keep-awake-until"
)

// MaxRevoked bounds the revoked-session list; past it the auth API raises
// the epoch instead, which ends every session of the user.
const MaxRevoked = 64

// ErrInvalidClaim means a claim's account annotations cannot be trusted.
var ErrInvalidClaim = errors.New("invalid account claim")

// Revoked is one revoked session, kept until its last token has expired.
type Revoked struct {
	SessionID string `json:"sid"`
	Expiry    int64  `json:"exp"`
}

// Account is what a claim says about its user.
type Account struct {
	User string
	// UID is the claim's metadata.uid: one account's lifetime, from signup
	// (or recreate) to deletion. Sessions carry it in their id.
	UID       string
	TokenHash [sha256.Size]byte
	Epoch     int64
	Revoked   []Revoked
	// TokensPerDay is an admin's egress budget override
	// (AnnotationEgressTokensPerDay), nil when there is none.
	TokensPerDay *int64
}

// Managed reports whether the auth API owns the claim.
func Managed(c *extensions.SandboxClaim) bool {
	return c.Labels[LabelManagedBy] == ManagedByValue
}

// FromClaim reads the account of a managed claim, rejecting malformed
// annotations rather than guessing. A claim being deleted (account deletion
// or recreate, possibly held by finalizers) is no account, so its sessions
// end as soon as the deletion is seen.
func FromClaim(c *extensions.SandboxClaim) (Account, error) {
	if !Managed(c) {
		return Account{}, fmt.Errorf("%w: not managed", ErrInvalidClaim)
	}
	if c.DeletionTimestamp != nil {
		return Account{}, fmt.Errorf("%w: being deleted", ErrInvalidClaim)
	}
	a := Account{User: c.Labels[LabelUser], UID: string(c.UID)}
	if err := ValidateUser(a.User); err != nil {
		return Account{}, fmt.Errorf("%w: user label: %w", ErrInvalidClaim, err)
	}
	h, err := hex.DecodeString(c.Annotations[AnnotationTokenHash])
	if err != nil || len(h) != sha256.Size {
		return Account{}, fmt.Errorf("%w: token hash", ErrInvalidClaim)
	}
	copy(a.TokenHash[:], h)
	if s, ok := c.Annotations[AnnotationSessionEpoch]; ok {
		if a.Epoch, err = strconv.ParseInt(s, 10, 64); err != nil || a.Epoch < 0 {
			return Account{}, fmt.Errorf("%w: session epoch", ErrInvalidClaim)
		}
	}
	if s, ok := c.Annotations[AnnotationRevokedSessions]; ok && s != "" {
		if err := json.Unmarshal([]byte(s), &a.Revoked); err != nil || len(a.Revoked) > MaxRevoked {
			return Account{}, fmt.Errorf("%w: revoked sessions", ErrInvalidClaim)
		}
	}
	if n, ok := TokensPerDayOf(c); ok {
		a.TokensPerDay = &n
	}
	return a, nil
}

// HashToken returns the SHA-256 of a bearer token.
func HashToken(token string) [sha256.Size]byte { return sha256.Sum256([]byte(token)) }

// TokenMatches compares a presented bearer token with the account's hash in
// constant time.
func (a Account) TokenMatches(token string) bool {
	h := HashToken(token)
	return subtle.ConstantTimeCompare(h[:], a.TokenHash[:]) == 1
}

// SessionValid reports whether a session with this id and epoch belongs to
// this account (its id starts with the claim's UID, see NewSessionID) and
// has been neither revoked nor superseded by a newer epoch. An account
// without a UID accepts no session.
func (a Account) SessionValid(sessionID string, epoch int64) bool {
	if !a.OwnsSession(sessionID) || epoch < a.Epoch {
		return false
	}
	for _, r := range a.Revoked {
		if r.SessionID == sessionID {
			return false
		}
	}
	return true
}

// PruneRevoked drops revoked entries whose tokens have all expired.
func PruneRevoked(list []Revoked, now time.Time) []Revoked {
	out := list[:0:0]
	for _, r := range list {
		if r.Expiry > now.Unix() {
			out = append(out, r)
		}
	}
	return out
}

// Revoke returns the revocation state after ending session sessionID, whose
// tokens may be renewed until expiry: expired entries are pruned at now and
// the session is added to the list, unless the list would exceed MaxRevoked,
// in which case the epoch is raised instead and the list emptied (which ends
// every session of the user). A session already revoked changes nothing.
func (a Account) Revoke(sessionID string, expiry, now time.Time) (epoch int64, revoked []Revoked) {
	list := PruneRevoked(a.Revoked, now)
	for _, r := range list {
		if r.SessionID == sessionID {
			return a.Epoch, list
		}
	}
	if len(list) >= MaxRevoked {
		return a.Epoch + 1, []Revoked{}
	}
	return a.Epoch, append(list, Revoked{SessionID: sessionID, Expiry: expiry.Unix()})
}

// EncodeRevoked renders a revoked-session list as the value of
// AnnotationRevokedSessions.
func EncodeRevoked(list []Revoked) string {
	if list == nil {
		list = []Revoked{}
	}
	b, _ := json.Marshal(list) // a slice of plain structs always encodes
	return string(b)
}
