package sweeper

import (
	"context"
	"time"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// wakeOnSchedule wakes sb, a suspended sandbox of claim c, when its owner's
// wake schedule has a moment in (since, now], so the agent is warm when
// they arrive. The wake is an idle rule input like any other: the sandbox
// is then Ready since now and is suspended IdleTimeout later if unused.
func (s *Sweeper) wakeOnSchedule(ctx context.Context, t *term, sb *agents.Sandbox, c *extensions.SandboxClaim, since, now time.Time) {
	w, ok := account.WakeScheduleOf(c)
	if !ok || !w.Due(since, now) {
		return
	}
	until, ok := t.mayAct(time.Now())
	if !ok {
		return
	}
	result, err := s.setMode(ctx, until, sb, "scheduled wake", s.patch.Wake)
	if err == nil {
		s.log.Info("woke sandbox on its owner's schedule", "namespace", sb.Namespace, "sandbox", sb.Name, "schedule", w.String())
	}
	s.m.scheduledWakes.WithLabelValues(result).Inc()
	s.writeAudit(ctx, "scheduled_wake", userOf(c), sb.Name, result, "schedule", w.String())
}

// suspended: spec.operatingMode is Suspended and the Sandbox is not being
// deleted.
func suspended(sb *agents.Sandbox) bool {
	return sb.Spec.OperatingMode == agents.OperatingModeSuspended && sb.DeletionTimestamp == nil
}
