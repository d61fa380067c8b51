package account

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strings"
)

// The entry state binds a subdomain-routing entry code to the browser that
// started the flow, as an OAuth state does: the node proxy keeps a random
// state in a host-only cookie of the user origin, sends the main origin
// its binding (EntryStateParam), the auth API puts the binding into the
// code, and a redemption must present the state itself (after
// EntryStateSep) to be accepted.
const (
	// EntryStateParam is the query parameter that carries the binding to
	// /u/<user>/... on the main origin.
	EntryStateParam = "sandgate_state"
	// EntryStateSep joins entry code and state in a redemption; neither a
	// compact JWS nor a base64url state contains it.
	EntryStateSep = "~"
)

// EntryStateBinding is the binding of state: the first 16 bytes of its
// SHA-256, base64url (22 characters). Knowing it does not give the state.
func EntryStateBinding(state string) string {
	h := sha256.Sum256([]byte(state))
	return base64.RawURLEncoding.EncodeToString(h[:16])
}

// EntryStateMatches reports, in constant time, whether state is the entry
// state whose binding an entry code's id (<random>.<binding>) carries.
func EntryStateMatches(codeID, state string) bool {
	i := strings.LastIndexByte(codeID, '.')
	if i < 0 || state == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(codeID[i+1:]), []byte(EntryStateBinding(state))) == 1
}
