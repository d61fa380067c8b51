package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// kind is what a work item reconciles.
type kind uint8

const (
	sandboxItem kind = iota
	claimItem
	poolItem
	pvcItem
)

func (k kind) String() string {
	return [...]string{"sandbox", "claim", "pool", "pvc"}[k]
}

// item is one unit of work: an object to reconcile, by name, since it may
// be gone.
type item struct {
	kind      kind
	namespace string
	name      string
}

// Controller is the stand-in agent-sandbox controller: it reconciles
// Sandboxes, SandboxClaims and SandboxWarmPools, and also does the jobs of
// the kube-controller-manager and scheduler that the simulated cluster
// lacks (owner garbage collection, volume claim protection, and pod
// placement unless Options.LeaveScheduling).
type Controller struct {
	opts   Options
	log    *slog.Logger
	queue  workqueue.TypedRateLimitingInterface[item]
	scopes map[string]*scope               // by namespace; "" when watching all
	nodes  informers.SharedInformerFactory // nil with LeaveScheduling
	ready  chan struct{}

	mu      sync.Mutex
	waiting map[types.UID]wait // objects waiting for a delay
	// rejected holds, by Sandbox, the generation the API server rejected
	// an object of for good (v1.0.13): the status says so too, but the
	// cache may not show it to the next pass yet.
	rejected map[types.UID]rejection
}

// rejection is a permanent rejection of a Sandbox's generation.
type rejection struct {
	generation int64
	message    string
}

// wait is a delay an object waits out: from since, for delay, fixed when
// the wait starts.
type wait struct {
	since time.Time
	delay time.Duration
}

// New checks opts and builds the informers; Run starts them.
func New(opts Options) (*Controller, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("controller options: %w", err)
	}
	opts = opts.withDefaults()
	c := &Controller{
		opts: opts,
		log:  opts.Logger.With("component", "sim-controller"),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[item](5*time.Millisecond, 2*time.Second),
			workqueue.TypedRateLimitingQueueConfig[item]{Name: "sim-controller"}),
		scopes:   map[string]*scope{},
		ready:    make(chan struct{}),
		waiting:  map[types.UID]wait{},
		rejected: map[types.UID]rejection{},
	}
	namespaces := opts.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	for _, ns := range namespaces {
		s, err := newScope(opts, ns)
		if err != nil {
			return nil, err
		}
		if err := c.watch(s); err != nil {
			return nil, err
		}
		c.scopes[ns] = s
	}
	if opts.LeaveScheduling {
		return c, nil
	}
	c.nodes = informers.NewSharedInformerFactoryWithOptions(opts.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = labels.SelectorFromSet(opts.NodeSelector).String()
		}))
	if _, err := c.nodes.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.enqueueAllSandboxes() },
	}); err != nil {
		return nil, fmt.Errorf("watch nodes: %w", err)
	}
	return c, nil
}

// scope returns the informers that watch namespace ns.
func (c *Controller) scope(ns string) *scope {
	if s := c.scopes[metav1.NamespaceAll]; s != nil {
		return s
	}
	return c.scopes[ns]
}

// Ready is closed once the caches have synced and workers run.
func (c *Controller) Ready() <-chan struct{} { return c.ready }

// Run reconciles until ctx ends, then stops its workers and informers and
// waits for them.
func (c *Controller) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	defer c.queue.ShutDown()
	var synced []cache.InformerSynced
	for _, s := range c.scopes {
		defer s.factory.Shutdown()
		synced = append(synced, s.run(ctx, wg.Go)...)
	}
	if c.nodes != nil {
		defer c.nodes.Shutdown()
		c.nodes.Start(ctx.Done())
		synced = append(synced, c.nodes.Core().V1().Nodes().Informer().HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil // stopped before the caches synced: a shutdown, not a failure
	}
	for range c.opts.Workers {
		wg.Go(func() {
			for c.processNext(ctx) {
			}
		})
	}
	close(c.ready)
	c.log.Info("running", "namespaces", c.opts.Namespaces)
	<-ctx.Done()
	return nil
}

func (c *Controller) processNext(ctx context.Context) bool {
	it, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(it)
	after, err := c.reconcile(ctx, it)
	switch {
	case err != nil:
		level := slog.LevelWarn
		if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || errors.Is(err, errRetry) || ctx.Err() != nil {
			level = slog.LevelDebug
		}
		c.log.Log(ctx, level, "reconcile", "kind", it.kind, "namespace", it.namespace, "name", it.name, "error", err)
		c.queue.AddRateLimited(it)
	case after > 0:
		c.queue.Forget(it)
		c.queue.AddAfter(it, after)
	default:
		c.queue.Forget(it)
	}
	return true
}

// errRetry asks for a quick retry without a warning.
var errRetry = errors.New("retry")

func (c *Controller) reconcile(ctx context.Context, it item) (time.Duration, error) {
	s := c.scope(it.namespace)
	if s == nil {
		return 0, nil
	}
	switch it.kind {
	case sandboxItem:
		return c.syncSandbox(ctx, s, it.namespace, it.name)
	case claimItem:
		return c.syncClaim(ctx, s, it.namespace, it.name)
	case poolItem:
		return c.syncPool(ctx, s, it.namespace, it.name)
	case pvcItem:
		return 0, c.syncVolumeClaim(ctx, s, it.namespace, it.name)
	}
	return 0, nil
}

// waitLeft starts (once) a delay for uid and returns what is left of it;
// the delay of the first call holds until doneWaiting.
func (c *Controller) waitLeft(uid types.UID, delay time.Duration) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	w, ok := c.waiting[uid]
	if !ok {
		w = wait{since: time.Now(), delay: delay}
		c.waiting[uid] = w
	}
	return time.Until(w.since.Add(w.delay))
}

// reject records that the API server rejected generation of Sandbox uid.
func (c *Controller) reject(uid types.UID, generation int64, message string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rejected[uid] = rejection{generation, message}
}

// rejectedAt returns the message of a rejection of generation of Sandbox
// uid, or "".
func (c *Controller) rejectedAt(uid types.UID, generation int64) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.rejected[uid]; ok && r.generation == generation {
		return r.message
	}
	return ""
}

// forget drops what the controller remembers of a deleted object.
func (c *Controller) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.waiting, uid)
	delete(c.rejected, uid)
}

// doneWaiting forgets the delay of uid.
func (c *Controller) doneWaiting(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.waiting, uid)
}
