package account

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
)

// FirstEpoch is the session epoch of a new claim. Epochs count raises
// (token rotation, a full revoked list, a recreate); they never come from
// a clock, so no replica's clock can move them. Sessions of an
// earlier claim of the same name are told apart by the claim UID in their
// id, not by the epoch.
const FirstEpoch = 1

// sessionIDRandomBytes is 128 bits, 22 base64url characters.
const sessionIDRandomBytes = 16

// sessionIDSep ends the claim UID in a session id; a UID never holds it.
const sessionIDSep = "."

// NewSessionID returns the id of a new session of the account whose claim
// has uid: "<uid>.<random>". Renewals and entry codes keep it, so every
// token of the session stays bound to that one claim.
func NewSessionID(uid string) string {
	b := make([]byte, sessionIDRandomBytes)
	rand.Read(b) // never fails: crypto/rand.Read aborts the program instead
	return uid + sessionIDSep + base64.RawURLEncoding.EncodeToString(b)
}

// OwnsSession reports whether sessionID was made by NewSessionID for this
// account's claim, not for an earlier claim of the same name.
func (a Account) OwnsSession(sessionID string) bool {
	uid, random, ok := strings.Cut(sessionID, sessionIDSep)
	return ok && a.UID != "" && uid == a.UID && random != ""
}
