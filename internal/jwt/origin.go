package jwt

// In subdomain routing a session reaches a user origin in two more kinds
// of token, signed with the same keys but for their own audiences, so that
// no kind is accepted where another is expected.

// OriginAudience is the aud of origin sessions: the cookie a user origin
// holds, bound to that origin by the origin claim.
func OriginAudience(sessionAudience string) string { return sessionAudience + "/origin" }

// EntryAudience is the aud of the single-use entry codes the auth API mints
// for a user origin and redeems once for an origin session.
func EntryAudience(sessionAudience string) string { return sessionAudience + "/enter" }

// ReplicaAudience is the aud of the tokens one auth API replica proves
// itself with to another (only replicas hold the signing keys).
func ReplicaAudience(sessionAudience string) string { return sessionAudience + "/replica" }
