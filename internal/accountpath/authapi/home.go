package authapi

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// idleView is what the account home asks of the sweeper, when the
// Activity it was given offers it (only the leader knows): when a sandbox
// was last used, and when it will be suspended if it stays unused.
type idleView interface {
	Idle(k activity.Key, now time.Time) (lastActive, suspendAt time.Time, ok bool)
}

// agentFacts describes the claim's agent for its owner's landing page:
// when it was last active (or since when it runs or sleeps), when it will
// be suspended, and its workspace size. What cannot be read is left out.
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
	idle, known := s.opts.Activity.(idleView)
	var last, suspendAt time.Time
	if known {
		last, suspendAt, known = idle.Idle(activity.Key{Namespace: sb.Namespace, Name: sb.Name}, now)
	}
	switch {
	case known && !last.IsZero():
		facts = append(facts, [2]string{"Last active", when(last, now)})
	case state == StateReady:
		if t := conditionSince(sb.Status.Conditions, agents.ConditionReady); !t.IsZero() {
			facts = append(facts, [2]string{"Running since", when(t, now)})
		}
	case state == StateSuspended:
		if t := conditionSince(sb.Status.Conditions, agents.ConditionSuspended); !t.IsZero() {
			facts = append(facts, [2]string{"Suspended since", when(t, now)})
		}
	}
	if state == StateReady {
		v := "after a while without use; it wakes again when you open it"
		if known && !suspendAt.IsZero() {
			v = "around " + when(suspendAt, now) + " unless it is used"
		}
		facts = append(facts, [2]string{"Suspends", v})
	}
	if size := workspaceSize(sb); size != "" {
		facts = append(facts, [2]string{"Workspace", size})
	}
	return facts
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
