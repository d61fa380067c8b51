package sweeper

import (
	"context"
	"log/slog"
)

// writeAudit writes one audit event of an action the leader took on a
// user's sandbox, with the keys the auth API's events use (docs/audit.md):
// the actor is the leader itself, so there is no client address.
func (s *Sweeper) writeAudit(ctx context.Context, action, user, sandbox, outcome string, attrs ...any) {
	args := append([]any{"action", action, "user", user, "auth", "leader", "client", "", "outcome", outcome, "sandbox", sandbox}, attrs...)
	s.audit.Log(context.WithoutCancel(ctx), slog.LevelInfo, "audit", args...)
}
