package sweeper

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
)

// fakePods records pod deletions and events.
type fakePods struct {
	mu      sync.Mutex
	deleted []string
	events  []*corev1.Event
}

func (p *fakePods) Delete(_ context.Context, name string, _ metav1.DeleteOptions) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deleted = append(p.deleted, name)
	return nil
}

func (p *fakePods) Create(_ context.Context, ev *corev1.Event, _ metav1.CreateOptions) (*corev1.Event, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, ev)
	return ev, nil
}

func (p *fakePods) seen() ([]string, []*corev1.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.deleted), slices.Clone(p.events)
}

// failPod sets sb's conditions as a v0.5.x controller does when its pod,
// named by the pod-name annotation, reaches phase Failed.
// Like every change of the fake, it replaces the Sandbox with a changed
// copy: the sweeper may be reading the one it listed.
func (f *fakeCluster) failPod(sb string, conds ...metav1.Condition) {
	f.mu.Lock()
	s := f.sandboxes[sb].DeepCopy()
	s.Annotations = map[string]string{agents.AnnotationPodName: sb + "-pod"}
	f.sandboxes[sb] = s
	f.mu.Unlock()
	f.setConditions(sb, conds...)
}

// setConditions replaces sb's conditions, each changed now.
func (f *fakeCluster) setConditions(sb string, conds ...metav1.Condition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sandboxes[sb].DeepCopy()
	s.ResourceVersion = f.nextRV()
	s.Status.Conditions = nil
	for _, c := range conds {
		c.LastTransitionTime = metav1.Now()
		s.Status.Conditions = append(s.Status.Conditions, c)
	}
	f.sandboxes[sb] = s
}

var (
	podFailed    = metav1.Condition{Type: agents.ConditionReady, Status: metav1.ConditionFalse, Reason: agents.ReasonPodFailed}
	podReady     = metav1.Condition{Type: agents.ConditionReady, Status: metav1.ConditionTrue, Reason: agents.ReasonDependenciesReady}
	finishedKept = metav1.Condition{Type: agents.ConditionFinished, Status: metav1.ConditionTrue, Reason: agents.ReasonPodFailed}
)

// TestFailedPodDeletedOncePerFailure: the leader deletes the terminated
// pod of a managed, running sandbox once, records an Event on the Sandbox
// and counts it; a later failure of the recreated pod is deleted again.
func TestFailedPodDeletedOncePerFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		o, pods := podOptions()
		f, s := sweepingBob(t, o)
		f.failPod("pool-a", podFailed)
		at(start, time.Minute)
		deleted, events := pods.seen()
		if !slices.Equal(deleted, []string{"pool-a-pod"}) {
			t.Fatalf("deleted %v after a minute of sweeps, want pool-a-pod once", deleted)
		}
		if len(events) != 1 || events[0].InvolvedObject.Kind != "Sandbox" || events[0].InvolvedObject.Name != "pool-a" || events[0].Reason != "TerminatedPodDeleted" {
			t.Errorf("events %v", events)
		}
		if n := testutil.ToFloat64(s.m.failedPods.WithLabelValues(failedPodDeleted)); n != 1 {
			t.Errorf("failed pods metric %v, want 1", n)
		}
		expectPatches(t, f, "a failed sandbox is not suspended")

		f.failPod("pool-a", finishedKept, podFailed)
		at(start, 2*time.Minute)
		if deleted, _ := pods.seen(); len(deleted) != 2 {
			t.Errorf("deleted %v after a second failure, want two deletions", deleted)
		}
	})
}

// TestFinishedKeptIsNotAFailure: from v1.0.13 Finished=True survives a
// suspend and outlives the pod that finished. A woken sandbox whose new pod
// is Ready or starting is not failed, and no pod of it is deleted; when the
// new pod fails too, the pod (named after the Sandbox, with no pod-name
// annotation in v1.0) is deleted.
func TestFinishedKeptIsNotAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		o, pods := podOptions()
		f, _ := sweepingBob(t, o)
		f.setConditions("pool-a", finishedKept, podReady)
		at(start, time.Minute)
		f.setConditions("pool-a", finishedKept, metav1.Condition{Type: agents.ConditionReady, Status: metav1.ConditionFalse, Reason: agents.ReasonDependenciesNotReady})
		at(start, 2*time.Minute)
		if deleted, _ := pods.seen(); len(deleted) != 0 {
			t.Fatalf("deleted %v of a sandbox whose earlier pod once finished", deleted)
		}
		f.setConditions("pool-a", finishedKept, podFailed)
		at(start, 3*time.Minute)
		if deleted, _ := pods.seen(); !slices.Equal(deleted, []string{"pool-a"}) {
			t.Errorf("deleted %v once the current pod failed, want pool-a", deleted)
		}
	})
}

// TestFailedPodLeftAloneUnlessManagedAndRunning: pods of unmanaged and of
// suspended sandboxes are never deleted.
func TestFailedPodLeftAloneUnlessManagedAndRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		o, pods := podOptions()
		f := newFakeCluster()
		f.addClaim("hand-made", "pool-x", false)
		f.addClaim("dsh-bob", "pool-a", true)
		f.setMode("pool-a", agents.OperatingModeSuspended)
		f.failPod("pool-x", podFailed)
		f.failPod("pool-a", podFailed)
		s := newTestSweeper(t, o, f)
		_, stop := startTerm(t, s)
		defer stop()
		at(start, time.Minute)
		if deleted, _ := pods.seen(); len(deleted) != 0 {
			t.Errorf("deleted %v", deleted)
		}
	})
}

// podOptions are testOptions with a fake that takes pod deletions and
// Events.
func podOptions() (Options, *fakePods) {
	pods := &fakePods{}
	o := testOptions()
	o.Pods, o.Events = pods, pods
	return o, pods
}
