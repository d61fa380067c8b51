package fleet

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
)

// reachTimeout bounds the wait for one change to reach every cache.
const reachTimeout = time.Minute

// raiseEpoch raises user's session epoch, as a logout of every session
// does.
func raiseEpoch(ctx context.Context, sb *sandboxapi.Client, user string) error {
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, account.AnnotationSessionEpoch, strconv.FormatInt(time.Now().UnixNano(), 10))
	if _, err := sb.SandboxClaims(namespace).Patch(ctx, account.ClaimName(informer.DefaultClaimPrefix, user), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("raise session epoch: %w", err)
	}
	return nil
}

// setMode sets account i's Sandbox's operatingMode, as the auth API's
// suspend and wake do.
func setMode(ctx context.Context, sb *sandboxapi.Client, i int, mode agents.OperatingMode) error {
	patch := fmt.Appendf(nil, `{"spec":{"operatingMode":%q}}`, mode)
	if _, err := sb.Sandboxes(namespace).Patch(ctx, sandboxName(i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("set operatingMode %s: %w", mode, err)
	}
	return nil
}

// arrivals times one change's arrival at each cache.
type arrivals struct {
	mu   sync.Mutex
	last time.Time
	left int
	all  chan struct{}
}

func newArrivals(n int) *arrivals { return &arrivals{left: n, all: make(chan struct{})} }

// arrived records one cache's arrival.
func (a *arrivals) arrived() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last = time.Now()
	if a.left--; a.left == 0 {
		close(a.all)
	}
}

// wait returns how long after sent the last cache held the change.
func (a *arrivals) wait(ctx context.Context, sent time.Time, what string, n int) (time.Duration, error) {
	select {
	case <-a.all:
	case <-time.After(reachTimeout):
		a.mu.Lock()
		defer a.mu.Unlock()
		return 0, fmt.Errorf("%s reached %d of %d caches in %v", what, n-a.left, n, reachTimeout)
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last.Sub(sent), nil
}

// logoutReach raises user's session epoch and returns how long after the
// request the last of idx held it: the path a logout takes to the node
// proxies, which end the user's open streams on the callback.
func logoutReach(ctx context.Context, sb *sandboxapi.Client, idx []*informer.Index, user string) (time.Duration, error) {
	a := newArrivals(len(idx))
	for _, x := range idx {
		var once sync.Once
		stop := x.WatchAccount(user, func() { once.Do(a.arrived) })
		defer stop()
	}
	sent := time.Now()
	if err := raiseEpoch(ctx, sb, user); err != nil {
		return 0, err
	}
	return a.wait(ctx, sent, "a logout of "+user, len(idx))
}

// modeReach sets account i's operatingMode and returns how long after the
// request the last of idx routed it accordingly: held for a wake once
// Suspended, no longer Suspended once Running.
func modeReach(ctx context.Context, sb *sandboxapi.Client, idx []*informer.Index, i int, mode agents.OperatingMode) (time.Duration, error) {
	done := func(r informer.Route) bool {
		return (r.State == informer.StateSuspended) == (mode == agents.OperatingModeSuspended)
	}
	a := newArrivals(len(idx))
	var wg sync.WaitGroup
	defer wg.Wait()
	wctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	for _, x := range idx {
		wg.Go(func() {
			if _, err := x.WaitRoute(wctx, userName(i), done); err == nil {
				a.arrived()
			}
		})
	}
	sent := time.Now()
	if err := setMode(ctx, sb, i, mode); err != nil {
		return 0, err
	}
	return a.wait(ctx, sent, fmt.Sprintf("operatingMode %s of %s", mode, sandboxName(i)), len(idx))
}
