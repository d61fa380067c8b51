package sweeper

import (
	"context"
	"maps"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
)

// sweepState is one term's memory of the sandboxes.
type sweepState struct {
	// seen is when this term first saw each sandbox Running under a
	// managed claim; the idle clock never starts earlier.
	seen firstSeen
	// patched holds the resourceVersion each suspended sandbox had, until
	// the cache moves past it.
	patched map[activity.Key]string
	// recovered holds, per sandbox, the failure whose pod was deleted.
	recovered map[activity.Key]time.Time
	// invalid holds, per sandbox, the InvalidConfiguration already
	// reported: when its Ready condition last changed.
	invalid map[activity.Key]time.Time
	// allow is the busy time each user's agent used today.
	allow *allowances
	// swept is when the previous sweep ran: wake schedules fire for the
	// moments since.
	swept time.Time
}

type seenAt struct {
	uid types.UID
	at  time.Time
}

// firstSeen is sweepState.seen: the sweep loop writes it, account pages
// read it through Idle, so it has a lock of its own.
type firstSeen struct {
	mu sync.Mutex
	m  map[activity.Key]seenAt
}

// note returns when sandbox uid at k was first seen, recording now if it
// was not (or another sandbox had k).
func (f *firstSeen) note(k activity.Key, uid types.UID, now time.Time) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	first, ok := f.m[k]
	if !ok || first.uid != uid {
		first = seenAt{uid: uid, at: now}
		f.m[k] = first
	}
	return first.at
}

// at returns when sandbox uid at k was first seen, or now if it was not
// yet: the next sweep records about that.
func (f *firstSeen) at(k activity.Key, uid types.UID, now time.Time) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	if first, ok := f.m[k]; ok && first.uid == uid {
		return first.at
	}
	return now
}

func (f *firstSeen) drop(k activity.Key) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, k)
}

func (f *firstSeen) forget(gone func(activity.Key) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	forget(f.m, gone)
}

func (s *Sweeper) newSweepState() *sweepState {
	return &sweepState{
		seen: firstSeen{m: make(map[activity.Key]seenAt)}, patched: make(map[activity.Key]string),
		recovered: make(map[activity.Key]time.Time), invalid: make(map[activity.Key]time.Time),
		allow: newAllowances(s.opts.BusyAllowance, 2*s.opts.SweepInterval),
	}
}

// loop sweeps at once and then every SweepInterval until ctx ends.
func (s *Sweeper) loop(ctx context.Context, t *term) {
	st := s.newSweepState()
	t.state.Store(st)
	tick := time.NewTicker(s.opts.SweepInterval)
	defer tick.Stop()
	for {
		s.sweep(ctx, t, st, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// sweep applies the package's rules to every Sandbox in the cache.
func (s *Sweeper) sweep(ctx context.Context, t *term, st *sweepState, now time.Time) {
	own := indexOwners(s.src.Claims())
	sandboxes := s.src.Sandboxes()
	live := make(map[activity.Key]bool, len(sandboxes))
	for _, sb := range sandboxes {
		live[activity.Key{Namespace: sb.Namespace, Name: sb.Name}] = true
	}
	defer st.retain(live, now)
	defer s.agg.Retain(func(k activity.Key) bool { return live[k] }, now)
	lagging := s.agg.Lagging(now)
	since := st.swept
	if since.IsZero() {
		since = now.Add(-s.opts.SweepInterval)
	}
	st.swept = now
	for _, sb := range sandboxes {
		k := activity.Key{Namespace: sb.Namespace, Name: sb.Name}
		managed := own.managed(sb)
		if managed && suspended(sb) {
			s.wakeOnSchedule(ctx, t, sb, own.claim(sb), since, now)
		}
		if !running(sb) || !managed {
			st.seen.drop(k)
			delete(st.patched, k)
			continue
		}
		if msg, ok := agents.InvalidConfiguration(sb); ok {
			s.reportInvalid(ctx, st, sb, own.user(sb), msg)
			continue
		}
		if agents.Terminated(sb) {
			until, ok := t.mayAct(time.Now())
			if !ok {
				return
			}
			s.recoverFailedPod(ctx, until, st, sb, own.user(sb))
			continue
		}
		if rv, ok := st.patched[k]; ok {
			if rv == sb.ResourceVersion {
				continue // our suspend is not in the cache yet
			}
			delete(st.patched, k) // changed since, e.g. woken: start afresh
		}
		c := own.claim(sb)
		d := Decide(s.inputs(st, k, c, sb, st.seen.note(k, sb.UID, now), now))
		if used := st.allow.charge(userOf(c), k, d.UsesAllowance, now); used > 0 {
			s.m.busyUsed.Add(used.Seconds())
		}
		if !d.Suspend {
			continue
		}
		if lagging != "" {
			s.m.heldOff.Inc()
			s.log.Debug("suspend held off until an overdue node reports", "sandbox", sb.Name, "node", lagging)
			continue
		}
		until, ok := t.mayAct(time.Now())
		if !ok {
			return
		}
		if s.suspend(ctx, until, sb, userOf(c), d.Reason, now.Sub(d.At)+s.opts.IdleTimeout) {
			st.patched[k] = sb.ResourceVersion
			st.seen.drop(k)
		}
	}
}

// retain forgets the sandboxes that are gone from the cache.
func (st *sweepState) retain(live map[activity.Key]bool, now time.Time) {
	gone := func(k activity.Key) bool { return !live[k] }
	st.seen.forget(gone)
	st.allow.forget(gone, now)
	forget(st.patched, gone)
	forget(st.recovered, gone)
	forget(st.invalid, gone)
}

func forget[V any](m map[activity.Key]V, gone func(activity.Key) bool) {
	maps.DeleteFunc(m, func(k activity.Key, _ V) bool { return gone(k) })
}

// suspend patches sb to Suspended (setMode) and records it.
func (s *Sweeper) suspend(ctx context.Context, until time.Time, sb *agents.Sandbox, user string, why Reason, idle time.Duration) bool {
	result, err := s.setMode(ctx, until, sb, "suspend", s.patch.Suspend)
	if err == nil {
		s.log.Info("suspended idle sandbox", "namespace", sb.Namespace, "sandbox", sb.Name, "idle_ms", idle.Milliseconds(), "reason", why)
		s.m.idleSuspends.WithLabelValues(string(why)).Inc()
	}
	s.m.suspends.WithLabelValues(result).Inc()
	s.writeAudit(ctx, "suspend", user, sb.Name, result, "idle_ms", idle.Milliseconds(), "reason", string(why))
	return err == nil
}

// setMode patches sb's operating mode with patch (the patcher's Suspend or
// Wake), conditional on its resourceVersion, with until (the end of the
// term's certain leadership) as deadline, and returns the result's label:
// ok, conflict (the Sandbox changed first) or error. what names the
// action in the log.
func (s *Sweeper) setMode(ctx context.Context, until time.Time, sb *agents.Sandbox, what string, patch func(ctx context.Context, name, resourceVersion string) error) (string, error) {
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, s.opts.PatchTimeout)
	defer cancelTimeout()
	err := patch(ctx, sb.Name, sb.ResourceVersion)
	log := s.log.With("namespace", sb.Namespace, "sandbox", sb.Name)
	switch {
	case err == nil:
		return patchOK, nil
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		log.Debug("sandbox changed before "+what, "error", err)
		return patchConflict, err
	default:
		log.Warn(what+" failed", "error", err)
		return patchError, err
	}
}

// running: spec.operatingMode is Running (unset defaults to it) and the
// Sandbox is not being deleted.
func running(sb *agents.Sandbox) bool {
	m := sb.Spec.OperatingMode
	return (m == agents.OperatingModeRunning || m == "") && sb.DeletionTimestamp == nil
}

// readySince is the last transition of the Ready condition: a sandbox that
// just became Ready (woken) or stopped being so restarts its idle clock.
func readySince(sb *agents.Sandbox) time.Time {
	for _, c := range sb.Status.Conditions {
		if c.Type == agents.ConditionReady {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func latest(ts ...time.Time) time.Time {
	var l time.Time
	for _, t := range ts {
		if t.After(l) {
			l = t
		}
	}
	return l
}
