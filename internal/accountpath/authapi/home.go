package authapi

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/accountpath/sweeper"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// idleView is what the account home asks of the sweeper, when the
// Activity it was given offers it: what the idle rule says of a sandbox.
type idleView interface {
	Idle(c *extensions.SandboxClaim, sb *agents.Sandbox, now time.Time) sweeper.Suspension
}

var _ idleView = (*sweeper.Sweeper)(nil)

// agentFacts describes the claim's agent for its owner's landing page:
// since when it runs for this user (or sleeps), when it was last active
// where this replica knows it, when the idle rule suspends it, and its
// workspace size. What cannot be read is left out.
func (s *Server) agentFacts(ctx context.Context, c *extensions.SandboxClaim, state string) [][2]string {
	if c == nil || c.Status.Sandbox.Name == "" {
		return nil
	}
	sb, err := s.claims.sandboxes.Get(ctx, c.Status.Sandbox.Name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	now := s.opts.Now()
	var facts [][2]string
	switch state {
	case StateReady:
		facts = append(facts, [2]string{"Running since", when(runningSince(c, sb), now)})
		facts = append(facts, s.suspendFacts(ctx, c, sb, now)...)
	case StateSuspended:
		if t := conditionSince(sb.Status.Conditions, agents.ConditionSuspended); !t.IsZero() {
			facts = append(facts, [2]string{"Suspended since", when(t, now)})
		}
	}
	if w, ok := account.WakeScheduleOf(c); ok {
		if next := w.Next(now); !next.IsZero() {
			facts = append(facts, [2]string{"Wakes", describeSchedule(w) + "; next " + when(next, now)})
		}
	}
	if size := workspaceSize(sb); size != "" {
		facts = append(facts, [2]string{"Workspace", size})
	}
	return facts
}

// describeSchedule says a wake schedule for people.
func describeSchedule(w account.WakeSchedule) string {
	switch w.Repeat {
	case account.RepeatDaily:
		return "every day at " + w.At.Format("15:04") + " UTC"
	case account.RepeatWeekdays:
		return "Monday to Friday at " + w.At.Format("15:04") + " UTC"
	}
	return "once"
}

// runningSince is when the agent started running for its user: the
// later of the claim's creation (a warm-pool sandbox was Ready before its
// user signed up) and the sandbox's last Ready transition (a wake).
func runningSince(c *extensions.SandboxClaim, sb *agents.Sandbox) time.Time {
	since := c.CreationTimestamp.Time
	if t := conditionSince(sb.Status.Conditions, agents.ConditionReady); t.After(since) {
		since = t
	}
	return since
}

// suspendFacts are the last use, what keeps a Ready sandbox awake and
// when the idle rule suspends it, or why no time can be given.
func (s *Server) suspendFacts(ctx context.Context, c *extensions.SandboxClaim, sb *agents.Sandbox, now time.Time) [][2]string {
	idle, ok := s.opts.Activity.(idleView)
	if !ok {
		return [][2]string{{"Suspends", "never: idle suspend is not running on this service"}}
	}
	v := idle.Idle(c, sb, now)
	if !v.Exact {
		v = s.leaderSuspension(ctx, c, v)
	}
	var facts [][2]string
	if !v.LastActive.IsZero() {
		facts = append(facts, [2]string{"Last active", when(v.LastActive, now)})
	}
	if v.BusyUntil.After(now) && v.Reason != sweeper.ReasonBusy {
		facts = append(facts, [2]string{"Busy", "your agent said it is busy until " + when(v.BusyUntil, now)})
	}
	after := "after " + span(v.IdleTimeout) + " without use"
	if !v.Exact {
		if v.At.After(now) {
			after += ", not before " + when(v.At, now)
		}
		return append(facts, [2]string{"Suspends", after + "; only the replica of this service that runs the idle sweep knows its last use, and it did not answer this page's replica"})
	}
	around := "around " + when(v.At, now)
	var awake, suspends string
	switch v.Reason {
	case sweeper.ReasonRequest, sweeper.ReasonWebSocket:
		awake, suspends = "you are connected", "not while you are connected; then "+after
	case sweeper.ReasonModelCall:
		awake, suspends = "your agent is calling the model", "not while it is calling the model; then "+after
	case sweeper.ReasonModel:
		awake, suspends = "your agent called the model recently", around+" unless it is used or calls the model again"
	case sweeper.ReasonKeepAwake:
		awake, suspends = "you asked to keep it awake", around+", when your keep-awake ends, unless it is used"
	case sweeper.ReasonBusy:
		awake, suspends = "your agent said it is busy until "+when(v.BusyUntil, now), around+
			" at the latest: busy time is limited to "+span(v.AllowanceLeft)+" more today"
	case sweeper.ReasonIdle:
		suspends = "within moments: it has not been used for " + span(v.IdleTimeout)
	case sweeper.ReasonAllowanceUsed:
		suspends = "within moments: your agent says it is busy, but today's busy time is used up"
	case sweeper.ReasonActivity:
		awake, suspends = "you used it recently", around+" unless it is used; each use moves this later"
	case sweeper.ReasonWoken:
		awake, suspends = "it woke recently", around+" unless it is used; each use moves this later"
	default:
		suspends = around + " unless it is used; each use moves this later"
	}
	if awake != "" {
		facts = append(facts, [2]string{"Awake because", awake})
	}
	return append(facts, [2]string{"Suspends", suspends})
}

// conditionSince is when condition typ last became True, or zero.
func conditionSince(conds []metav1.Condition, typ string) time.Time {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil || c.Status != metav1.ConditionTrue {
		return time.Time{}
	}
	return c.LastTransitionTime.Time
}

// workspaceSize sums the storage the sandbox's volume claim templates ask
// for.
func workspaceSize(sb *agents.Sandbox) string {
	total := resource.Quantity{}
	n := 0
	for _, v := range sb.Spec.VolumeClaimTemplates {
		if q, ok := v.Spec.Resources.Requests["storage"]; ok {
			total.Add(q)
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return total.String() + " (persistent volume)"
}

// when shows t in UTC with how long ago or ahead of now it is.
func when(t, now time.Time) string {
	d := now.Sub(t)
	rel := "ago"
	if d < 0 {
		d, rel = -d, "from now"
	}
	return fmt.Sprintf("%s UTC (%s %s)", t.UTC().Format("2006-01-02 15:04"), roughly(d), rel)
}

// span says a setting's duration for people.
func span(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%d s", int(d/time.Second))
	}
	if d < time.Hour || d%time.Hour != 0 {
		return fmt.Sprintf("%d min", int(d/time.Minute))
	}
	return fmt.Sprintf("%d h", int(d/time.Hour))
}

// roughly rounds d for people.
func roughly(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "less than a minute"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d/time.Hour))
	}
	return fmt.Sprintf("%d days", int(d/(24*time.Hour)))
}
