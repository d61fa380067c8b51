package sweeper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/pause"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
)

// Outcomes the HTTP layer maps to responses.
var (
	// ErrNotLeader means this replica does not lead: forward the report
	// to Leader().Addr, or answer 503 if it was forwarded already.
	ErrNotLeader = errors.New("not the sweeper leader")
	// ErrNoLeader means no leader is known yet: answer 503.
	ErrNoLeader = errors.New("no sweeper leader known")
)

// Leader is the lease holder as this replica last observed it (at most a
// RetryPeriod old).
type Leader struct {
	// Identity is the holder's lease identity.
	Identity string
	// Pod and Addr are its parts: the leader's pod name and the host:port
	// where it takes reports.
	Pod  string
	Addr string
	// Self reports that the holder is this replica.
	Self bool
}

// Sweeper runs on every auth API replica: it campaigns for the Lease and,
// while leading, takes activity reports and suspends idle sandboxes.
type Sweeper struct {
	opts Options
	log  *slog.Logger
	// audit writes the audit events of the leader's actions.
	audit *slog.Logger
	m     *metrics
	agg   *Aggregator

	src   lister
	patch patcher
	// informers back src in production; nil in unit tests.
	informers []cache.SharedIndexInformer

	elector atomic.Pointer[leaderelection.LeaderElector]
	leading atomic.Pointer[term] // the term sweeping now, nil when none
}

// New validates o and builds a Sweeper; Run starts it.
func New(o Options) (*Sweeper, error) {
	if err := o.Validate(); err != nil {
		return nil, fmt.Errorf("sweeper options: %w", err)
	}
	c := newCaches(o)
	s, err := newSweeper(o, c, clientPatcher{c: o.Sandboxes})
	if err != nil {
		return nil, err
	}
	s.informers = []cache.SharedIndexInformer{c.sandboxes, c.claims}
	return s, nil
}

func newSweeper(o Options, src lister, p patcher) (*Sweeper, error) {
	o = o.withDefaults()
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	if o.Registerer != nil {
		if err := o.Registerer.Register(newInventory(src)); err != nil {
			return nil, fmt.Errorf("register sweeper inventory: %w", err)
		}
	}
	pod, _, _ := ParseIdentity(o.Identity) // validated
	return &Sweeper{
		opts: o, log: o.Logger.With("component", "sweeper", "identity", o.Identity), m: m,
		audit: o.Audit.With("log", "audit", "replica", pod),
		agg:   NewAggregator(o.ReportInterval), src: src, patch: p,
	}, nil
}

// Run starts the informers, waits for them to sync, then campaigns for the
// Lease until ctx ends: leading, losing and campaigning again. It returns
// nil once ctx has ended, the lease is released and every goroutine it
// started has stopped.
func (s *Sweeper) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	synced := make([]cache.InformerSynced, 0, len(s.informers))
	for _, inf := range s.informers {
		wg.Go(func() { inf.RunWithContext(ctx) })
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil
	}
	for {
		if err := s.campaign(ctx); err != nil {
			return err
		}
		if !pause.For(ctx, s.opts.RetryPeriod) {
			return nil
		}
	}
}

// Observe takes a report while this replica leads, or returns ErrNotLeader.
func (s *Sweeper) Observe(r activity.Report) error {
	if !s.Leading() {
		s.m.reports.WithLabelValues(reportNotLeader).Inc()
		return ErrNotLeader
	}
	s.agg.Observe(r, time.Now())
	s.m.reports.WithLabelValues(reportAccepted).Inc()
	return nil
}

// Leading reports whether this replica leads and may act now: its sweep
// loop runs and its last renewal is less than RenewDeadline old. Two
// replicas are never Leading at once.
func (s *Sweeper) Leading() bool {
	t := s.leading.Load()
	if t == nil {
		return false
	}
	_, ok := t.mayAct(time.Now())
	return ok
}

// Leader returns the lease holder, or ErrNoLeader when none is known or its
// identity does not say where it takes reports. Self with ErrNotLeader from
// Observe means leadership is changing hands: answer 503.
func (s *Sweeper) Leader() (Leader, error) {
	le := s.elector.Load()
	if le == nil {
		return Leader{}, ErrNoLeader
	}
	id := le.GetLeader()
	if id == "" {
		return Leader{}, ErrNoLeader
	}
	pod, addr, err := ParseIdentity(id)
	if err != nil {
		return Leader{}, fmt.Errorf("%w: %w", ErrNoLeader, err)
	}
	return Leader{Identity: id, Pod: pod, Addr: addr, Self: id == s.opts.Identity}, nil
}

// Sandbox returns the cached Sandbox name, slimmed to what the rules and
// account views read (mode, conditions, ownership, pod and node), for the
// auth API's views: every replica's caches are warm, leading or not.
func (s *Sweeper) Sandbox(name string) (*agents.Sandbox, bool) { return s.src.Sandbox(name) }
