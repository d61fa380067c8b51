package nodeproxy

import (
	"hash/maphash"

	"github.com/sandgate/sandgate/internal/connlimit"
)

// inFlightShards spreads users over locks so busy users do not contend.
const inFlightShards = 32

// inFlight counts each user's requests and WebSockets in progress and caps
// them at max; bodies accounts the auth API bodies being buffered, which
// no user is known for yet.
type inFlight struct {
	max    int
	seed   maphash.Seed
	shards [inFlightShards]connlimit.Counter[string]
	bodies *bodyBudget
}

func newInFlight(max int) *inFlight {
	return &inFlight{max: max, seed: maphash.MakeSeed(), bodies: newBodyBudget(authAPIClientBytes, authAPIBufferedBytes)}
}

func (l *inFlight) shard(user string) *connlimit.Counter[string] {
	return &l.shards[maphash.String(l.seed, user)%inFlightShards]
}

// acquire takes a slot for user, or reports false when all are taken.
func (l *inFlight) acquire(user string) bool { return l.shard(user).Take(user, l.max) }

// release gives back a slot acquire took.
func (l *inFlight) release(user string) { l.shard(user).Give(user) }

// count returns user's slots in use.
func (l *inFlight) count(user string) int { return l.shard(user).Count(user) }
