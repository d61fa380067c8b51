package sweeper

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// wakeOnSchedule wakes sb, a suspended sandbox of claim c, when its owner's
// wake schedule has a moment in (since, now], so the agent is warm when
// they arrive. The wake is an idle rule input like any other: the sandbox
// is then Ready since now and is suspended IdleTimeout later if unused.
func (s *Sweeper) wakeOnSchedule(ctx context.Context, until time.Time, sb *agents.Sandbox, c *extensions.SandboxClaim, since, now time.Time) {
	w, ok := account.WakeScheduleOf(c)
	if !ok || !w.Due(since, now) {
		return
	}
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, s.opts.PatchTimeout)
	defer cancelTimeout()
	err := s.patch.Wake(ctx, sb.Name, sb.ResourceVersion)
	log := s.log.With("namespace", sb.Namespace, "sandbox", sb.Name, "schedule", w.String())
	result := suspendOK
	switch {
	case err == nil:
		log.Info("woke sandbox on its owner's schedule")
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		result = suspendConflict
		log.Debug("sandbox changed before its scheduled wake", "error", err)
	default:
		result = suspendError
		log.Warn("scheduled wake failed", "error", err)
	}
	s.m.scheduledWakes.WithLabelValues(result).Inc()
	s.writeAudit(ctx, "scheduled_wake", userOf(c), sb.Name, result, "schedule", w.String())
}

// suspended: spec.operatingMode is Suspended and the Sandbox is not being
// deleted.
func suspended(sb *agents.Sandbox) bool {
	return sb.Spec.OperatingMode == agents.OperatingModeSuspended && sb.DeletionTimestamp == nil
}
