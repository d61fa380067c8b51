package sweeper

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// campaign runs one leader election until leadership is lost or ctx ends.
// Each campaign has a term of its own, so a late OnStartedLeading of an
// earlier one can never sweep.
func (s *Sweeper) campaign(ctx context.Context) error {
	t := &term{s: s}
	lock := &fencedLock{
		Interface: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: s.opts.LeaseNamespace, Name: s.opts.LeaseName},
			Client:     s.opts.Leases,
			LockConfig: resourcelock.ResourceLockConfig{Identity: s.opts.Identity},
		},
		t: t,
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   s.opts.LeaseDuration,
		RenewDeadline:   s.opts.RenewDeadline,
		RetryPeriod:     s.opts.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            s.opts.LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: t.lead,
			OnStoppedLeading: t.fence,
			OnNewLeader:      func(id string) { s.log.Info("leader observed", "leader", id) },
		},
	})
	if err != nil {
		return fmt.Errorf("build leader elector: %w", err) // Validate rules this out
	}
	s.elector.Store(le)
	le.Run(ctx)
	return nil
}

// term is one campaign's leadership. Once fenced it never sweeps again.
type term struct {
	s *Sweeper

	mu         sync.Mutex
	fenced     bool
	validUntil time.Time // last successful acquire or renew + RenewDeadline
	cancel     context.CancelFunc
	done       chan struct{} // closed when the sweep loop has returned
	// state is the sweep loop's memory, which Idle reads.
	state atomic.Pointer[sweepState]
}

// renewed records an acquire or renew that succeeded and started at start.
// Other replicas see the lease as held until at least start+LeaseDuration.
func (t *term) renewed(start time.Time) {
	t.mu.Lock()
	t.validUntil = start.Add(t.s.opts.RenewDeadline)
	t.mu.Unlock()
}

// mayAct reports whether a patch may be sent now, and until when.
func (t *term) mayAct(now time.Time) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.validUntil, !t.fenced && now.Before(t.validUntil)
}

// lead is OnStartedLeading: it sweeps until ctx ends or the term is fenced.
func (t *term) lead(ctx context.Context) {
	s := t.s
	t.mu.Lock()
	if t.fenced {
		t.mu.Unlock()
		return
	}
	ctx, t.cancel = context.WithCancel(ctx)
	t.done = make(chan struct{})
	done := t.done
	s.agg.Reset()
	s.leading.Store(t)
	s.m.leader.Set(1)
	t.mu.Unlock()
	defer close(done)
	s.log.Info("started leading")
	s.loop(ctx, t)
}

// fence ends the term and returns once its sweep loop has returned. It runs
// before the lease is released and as OnStoppedLeading.
func (t *term) fence() {
	s := t.s
	t.mu.Lock()
	first := !t.fenced
	t.fenced = true
	cancel, done := t.cancel, t.done
	t.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
	if first {
		s.leading.CompareAndSwap(t, nil)
		s.m.leader.Set(0)
		s.log.Info("stopped leading")
	}
}

// fencedLock is the Lease lock with the term's hooks: a successful acquire
// or renew extends the term, and the release (an update with no holder)
// first stops the sweep loop.
type fencedLock struct {
	resourcelock.Interface
	t *term
}

func (l *fencedLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	err := l.Interface.Create(ctx, r)
	if err == nil && r.HolderIdentity == l.Identity() {
		l.t.renewed(start)
	}
	return err
}

func (l *fencedLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	if r.HolderIdentity == "" {
		l.t.fence()
	}
	start := time.Now()
	err := l.Interface.Update(ctx, r)
	if err == nil && r.HolderIdentity == l.Identity() {
		l.t.renewed(start)
	}
	return err
}
