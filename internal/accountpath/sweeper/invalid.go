package sweeper

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
)

// reportInvalid tells operators, once per rejection, that the controller
// gave up on a managed sandbox: nothing the leader does (suspend, pod
// deletion) mends it, so it does neither. It logs at Error, counts the
// rejection, writes an audit event and records an Event on the Sandbox.
func (s *Sweeper) reportInvalid(ctx context.Context, st *sweepState, sb *agents.Sandbox, user, msg string) {
	k := activity.Key{Namespace: sb.Namespace, Name: sb.Name}
	var mark time.Time
	if c := meta.FindStatusCondition(sb.Status.Conditions, agents.ConditionReady); c != nil {
		mark = c.LastTransitionTime.Time
	}
	if seen, ok := st.invalid[k]; ok && seen.Equal(mark) {
		return
	}
	st.invalid[k] = mark
	s.log.Error("agent-sandbox controller rejected a user's sandbox for good (InvalidConfiguration): an operator must act",
		"namespace", sb.Namespace, "sandbox", sb.Name, "user", user, "reason", msg)
	s.m.invalid.Inc()
	s.event(ctx, sb, agents.ReasonInvalidConfiguration, "sandgate cannot serve this user's agent until its configuration is fixed: "+msg)
	s.writeAudit(ctx, "invalid_configuration", user, sb.Name, "reported", "reason", msg)
}
