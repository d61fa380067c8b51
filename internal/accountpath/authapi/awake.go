package authapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
)

var suspendNowPatch = []byte(`{"spec":{"operatingMode":"` + string(agents.OperatingModeSuspended) + `"}}`)

// awakeAnswer is the JSON answer to a keep-awake or a suspend-now.
type awakeAnswer struct {
	User           string     `json:"user"`
	KeepAwakeUntil *time.Time `json:"keep_awake_until"`
	Suspended      bool       `json:"suspended"`
}

// handleKeepAwake: the owner holds the idle rule off for KeepAwake from
// now (the claim's keep-awake annotation, which every replica and the
// leader read); pressing it again starts the time afresh.
func (s *Server) handleKeepAwake(w http.ResponseWriter, r *http.Request) {
	_, a, err := s.pathOwner(w, r, "keeping awake the agent of")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	until := s.opts.Now().Add(s.opts.KeepAwake).UTC().Truncate(time.Second)
	if err := s.claims.setKeepAwake(r.Context(), a.User, until.Format(time.RFC3339)); err != nil {
		s.fail(w, r, err)
		return
	}
	noteAudit(r, "until", until)
	s.log.Info("agent kept awake", "user", a.User, "until", until)
	s.actionDone(w, r, awakeAnswer{User: a.User, KeepAwakeUntil: &until})
}

// handleSuspendNow: the owner suspends their agent at once (it wakes on
// their next request, as after an idle suspend) and any keep-awake ends.
func (s *Server) handleSuspendNow(w http.ResponseWriter, r *http.Request) {
	_, a, err := s.pathOwner(w, r, "suspending the agent of")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.suspendAgent(r, a.User, "its owner"); err != nil {
		s.fail(w, r, err)
		return
	}
	s.actionDone(w, r, awakeAnswer{User: a.User, Suspended: true})
}

// suspendAgent ends user's keep-awake and suspends their Sandbox unless it
// is suspended already, noting on r's audit event which; by says who asked,
// for the log.
func (s *Server) suspendAgent(r *http.Request, user, by string) error {
	_, c, ok := s.claims.accountOf(user)
	if !ok {
		return fmt.Errorf("%w: user %s", ErrNoAccount, user)
	}
	sb, err := s.claims.sandboxOf(r.Context(), c)
	if err != nil {
		return err
	}
	if err := s.claims.setKeepAwake(r.Context(), user, ""); err != nil {
		return err
	}
	patched := sb.Spec.OperatingMode != agents.OperatingModeSuspended
	if patched {
		if _, err := s.claims.sandboxes.Patch(r.Context(), sb.Name, types.MergePatchType, suspendNowPatch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("patch sandbox: %w: %w", ErrUnavailable, err)
		}
		s.log.Info("sandbox suspended", "user", user, "sandbox", sb.Name, "by", by)
	}
	noteAudit(r, "sandbox", sb.Name, "result", map[bool]string{true: "patched", false: "suspended"}[patched])
	return nil
}

// handleWakeSchedule: the owner sets when their agent is woken before they
// arrive (at HH:MM UTC, once, daily or on weekdays), or clears it (repeat
// never); the leader wakes it then.
func (s *Server) handleWakeSchedule(w http.ResponseWriter, r *http.Request) {
	in, a, err := s.pathOwner(w, r, "setting the wake schedule of")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	value := ""
	if in.Repeat != "never" {
		sched, err := wakeScheduleOf(in, s.opts.Now())
		if err != nil {
			s.fail(w, r, badRequest("%v", err))
			return
		}
		value = sched.String()
	}
	if err := s.claims.setAnnotation(r.Context(), a.User, account.AnnotationWakeSchedule, value); err != nil {
		s.fail(w, r, err)
		return
	}
	noteAudit(r, "schedule", value)
	s.log.Info("wake schedule set", "user", a.User, "schedule", value)
	s.actionDone(w, r, map[string]string{"user": a.User, "wake_schedule": value})
}

// wakeScheduleOf reads a schedule form: once means the next at after now.
func wakeScheduleOf(in input, now time.Time) (account.WakeSchedule, error) {
	at, err := account.ParseTimeOfDay(in.At)
	if err != nil {
		return account.WakeSchedule{}, err
	}
	switch in.Repeat {
	case account.RepeatDaily, account.RepeatWeekdays:
		return account.WakeSchedule{Repeat: in.Repeat, At: at}, nil
	case account.RepeatOnce:
		return account.WakeSchedule{Repeat: in.Repeat, At: account.WakeSchedule{Repeat: account.RepeatDaily, At: at}.Next(now)}, nil
	}
	return account.WakeSchedule{}, fmt.Errorf("%w: repeat is once, daily, weekdays or never", account.ErrInvalidSchedule)
}

// setKeepAwake writes user's keep-awake annotation; "" removes it.
func (s *claimStore) setKeepAwake(ctx context.Context, user, value string) error {
	return s.setAnnotation(ctx, user, account.AnnotationKeepAwakeUntil, value)
}

// setAnnotation writes annotation key of user's claim; "" removes it.
func (s *claimStore) setAnnotation(ctx context.Context, user, key, value string) error {
	_, c, ok := s.accountOf(user)
	if !ok {
		return fmt.Errorf("%w: user %s", ErrNoAccount, user)
	}
	if c.Annotations[key] == value {
		return nil
	}
	var v any = value
	if value == "" {
		v = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
	if err != nil {
		return err
	}
	if _, err := s.claims.Patch(ctx, c.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patch claim: %w: %w", ErrUnavailable, err)
	}
	s.waitAnnotation(ctx, c.Name, key, value)
	return nil
}

// actionDone ends an account page action: a browser goes back to its
// account page, other clients get the answer.
func (s *Server) actionDone(w http.ResponseWriter, r *http.Request, answer any) {
	if browser(r) {
		seeOther(w, r, "/")
		return
	}
	writeJSON(w, http.StatusOK, answer)
}
