package sweeper

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

const ns = "sandgate"

// fakeCluster is both the sweeper's lister and its patcher: a suspend
// changes the Sandbox it lists, as the API server and informer would.
type fakeCluster struct {
	mu        sync.Mutex
	rv        int
	sandboxes map[string]*agents.Sandbox
	claims    []*extensions.SandboxClaim
	patches   []string      // names, in order
	wakes     []string      // names woken, in order
	block     chan struct{} // when set, Suspend waits for it, ignoring ctx
}

func newFakeCluster() *fakeCluster { return &fakeCluster{sandboxes: make(map[string]*agents.Sandbox)} }

func (f *fakeCluster) nextRV() string { f.rv++; return strconv.Itoa(f.rv) }

// addClaim adds a claim that adopted Sandbox sb, which is Running and Ready
// since now; managed says whether the claim carries our marker.
func (f *fakeCluster) addClaim(name, sb string, managed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := &extensions.SandboxClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name)}}
	if managed {
		c.Labels = map[string]string{account.LabelManagedBy: account.ManagedByValue, account.LabelUser: strings.TrimPrefix(name, "dsh-")}
	}
	c.Status.Sandbox.Name = sb
	f.claims = append(f.claims, c)
	f.sandboxes[sb] = &agents.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: sb, Namespace: ns, UID: types.UID("uid-" + sb), ResourceVersion: f.nextRV(),
			Labels: map[string]string{agents.LabelClaimUID: string(c.UID)}},
		Spec: agents.SandboxSpec{OperatingMode: agents.OperatingModeRunning},
		Status: agents.SandboxStatus{Conditions: []metav1.Condition{{
			Type: agents.ConditionReady, Status: metav1.ConditionTrue, LastTransitionTime: metav1.Now(),
		}}},
	}
}

// addSpare adds a warm-pool Sandbox no claim points at.
func (f *fakeCluster) addSpare(sb string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sandboxes[sb] = &agents.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: sb, Namespace: ns, UID: types.UID("uid-" + sb), ResourceVersion: f.nextRV()},
		Spec:       agents.SandboxSpec{OperatingMode: agents.OperatingModeRunning},
	}
}

// setMode changes a Sandbox's mode as a wake (or an operator) would; the
// Ready condition follows at once.
func (f *fakeCluster) setMode(sb string, m agents.OperatingMode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sandboxes[sb].DeepCopy()
	s.Spec.OperatingMode = m
	s.ResourceVersion = f.nextRV()
	st := metav1.ConditionTrue
	if m == agents.OperatingModeSuspended {
		st = metav1.ConditionFalse
	}
	s.Status.Conditions = []metav1.Condition{{Type: agents.ConditionReady, Status: st, LastTransitionTime: metav1.Now()}}
	f.sandboxes[sb] = s
}

func (f *fakeCluster) mode(sb string) agents.OperatingMode {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sandboxes[sb].Spec.OperatingMode
}

func (f *fakeCluster) Sandboxes() []*agents.Sandbox {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Collect(maps.Values(f.sandboxes))
}

func (f *fakeCluster) Sandbox(name string) (*agents.Sandbox, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sb, ok := f.sandboxes[name]
	return sb, ok
}

func (f *fakeCluster) Claims() []*extensions.SandboxClaim {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.claims)
}

func (f *fakeCluster) Suspend(_ context.Context, name, rv string) error {
	f.mu.Lock()
	block := f.block
	f.mu.Unlock()
	if block != nil {
		<-block // a request already sent completes whatever ctx says
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.setModeAt(name, rv, agents.OperatingModeSuspended); err != nil {
		return err
	}
	f.patches = append(f.patches, name)
	return nil
}

func (f *fakeCluster) Wake(_ context.Context, name, rv string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.setModeAt(name, rv, agents.OperatingModeRunning); err != nil {
		return err
	}
	f.wakes = append(f.wakes, name)
	return nil
}

// setModeAt sets the mode of Sandbox name if it is still at rv, as a
// conditional patch would; f.mu is held.
func (f *fakeCluster) setModeAt(name, rv string, m agents.OperatingMode) error {
	s := f.sandboxes[name]
	gr := schema.GroupResource{Group: agents.GroupVersion.Group, Resource: "sandboxes"}
	switch {
	case s == nil:
		return apierrors.NewNotFound(gr, name)
	case s.ResourceVersion != rv:
		return apierrors.NewConflict(gr, name, fmt.Errorf("resourceVersion %s, not %s", s.ResourceVersion, rv))
	}
	s = s.DeepCopy()
	s.Spec.OperatingMode = m
	s.ResourceVersion = f.nextRV()
	f.sandboxes[name] = s
	return nil
}

// annotate sets an annotation on claim name.
func (f *fakeCluster) annotate(name, key, value string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, c := range f.claims {
		if c.Name == name {
			c = c.DeepCopy()
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations[key] = value
			f.claims[i] = c
		}
	}
}

func (f *fakeCluster) woken() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.wakes)
}

func (f *fakeCluster) patched() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.patches)
}

// testOptions are the timings of the unit tests.
func testOptions() Options {
	return Options{
		Namespace: ns, Identity: Identity("authapi-0", "10.0.0.1:8081"),
		IdleTimeout: 10 * time.Minute, ReportInterval: 10 * time.Second, SweepInterval: 5 * time.Second,
	}
}

func newTestSweeper(t *testing.T, o Options, f *fakeCluster) *Sweeper {
	t.Helper()
	s, err := newSweeper(o, f, f)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// startTerm makes s lead as an elector would: a renewer keeps the term
// valid every RetryPeriod until stop, which fences the term like a release.
func startTerm(t *testing.T, s *Sweeper) (tm *term, stop func()) {
	t.Helper()
	tm = &term{s: s}
	tm.renewed(time.Now())
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Go(func() {
		every(ctx, s.opts.RetryPeriod, func() bool { tm.renewed(time.Now()); return true })
	})
	wg.Go(func() { tm.lead(ctx) })
	stopped := false
	return tm, func() {
		if stopped {
			return
		}
		stopped = true
		tm.fence()
		cancel()
		wg.Wait()
	}
}

// node reports for one simulated node proxy.
type node struct {
	name    string
	entries map[string]activity.Entry
}

func newNode(name string) *node { return &node{name: name, entries: make(map[string]activity.Entry)} }

// touch records traffic on sb now; work sets its open requests and
// WebSockets.
func (n *node) touch(sb string) {
	e := n.entries[sb]
	e.Namespace, e.Sandbox, e.LastActivity = ns, sb, time.Now().UnixMilli()
	n.entries[sb] = e
}

func (n *node) work(sb string, inFlight, ws int64) {
	n.touch(sb)
	e := n.entries[sb]
	e.InFlight, e.OpenWebSockets = inFlight, ws
	n.entries[sb] = e
}

func (n *node) report() activity.Report {
	return activity.Report{Node: n.name, SentAt: time.Now().UnixMilli(), Entries: slices.Collect(maps.Values(n.entries))}
}

// reportEvery sends n's report to s at once and then every interval until
// ctx ends.
func reportEvery(ctx context.Context, s *Sweeper, n *node, mu *sync.Mutex, interval time.Duration) {
	report := func() bool {
		mu.Lock()
		r := n.report()
		mu.Unlock()
		s.Observe(r)
		return true
	}
	report()
	every(ctx, interval, report)
}

// every calls f every d until ctx ends or f returns false.
func every(ctx context.Context, d time.Duration, f func() bool) {
	tick := time.NewTicker(d)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if !f() {
				return
			}
		}
	}
}
