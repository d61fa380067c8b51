package informer

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// stored builds an Index whose caches hold objs, without running informers.
func stored(t *testing.T, objs ...runtime.Object) *Index {
	t.Helper()
	x, err := New(newFakeAPI(t).options())
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		switch o := obj.(type) {
		case *extensions.SandboxClaim:
			err = x.claims.GetStore().Add(x.transformClaim(o))
		case *agents.Sandbox:
			err = x.sandboxes.GetStore().Add(x.transformSandbox(o))
		case *corev1.Pod:
			err = x.pods.GetStore().Add(x.transformPod(o))
		case *corev1.Node:
			err = x.nodes.GetStore().Add(x.transformNode(o))
		default:
			t.Fatalf("unexpected %T", obj)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return x
}

func TestLookupRoute(t *testing.T) {
	readyLocal := Route{
		State: StateReady, Sandbox: "sb", Node: testNode, NodeIP: "192.0.2.1", Local: true,
		Pod: Pod{Namespace: testNS, Name: "sb", UID: uidA, Container: "dsh", Addr: "10.0.0.5:3080"},
	}
	node := newNode(testNode, "192.0.2.1")
	otherNode := newNode("node-b", "192.0.2.2")
	pod := newPod("sb", uidA, testNode, "10.0.0.5", true)
	terminating := newPod("sb", uidA, testNode, "10.0.0.5", true)
	now := metav1.Now()
	terminating.DeletionTimestamp = &now
	failed := newSandbox("sb", testNode, "sb", false, false)
	failed.Status.Conditions[0].Reason = agents.ReasonPodFailed
	finishedCond := metav1.Condition{Type: agents.ConditionFinished, Status: metav1.ConditionTrue, Reason: agents.ReasonPodFailed}
	finishedWoken := newSandbox("sb", testNode, "", true, false)
	finishedWoken.Status.Conditions = append(finishedWoken.Status.Conditions, finishedCond)
	finishedStarting := newSandbox("sb", testNode, "", false, false)
	finishedStarting.Status.Conditions = append(finishedStarting.Status.Conditions, finishedCond)
	podScheduled := func(s *agents.Sandbox, reason string) *agents.Sandbox {
		s.Status.Conditions = append(s.Status.Conditions, metav1.Condition{Type: agents.ConditionPodScheduled, Status: metav1.ConditionFalse, Reason: reason})
		return s
	}
	invalid := newSandbox("sb", testNode, "", false, false)
	invalid.Status.Conditions[0].Reason = agents.ReasonInvalidConfiguration
	legacyName := readyLocal
	legacyName.Pod.Name = "sb-pod"
	tests := []struct {
		name string
		objs []runtime.Object
		want Route
	}{
		{"v1.0: no pod-name annotation, the pod has the Sandbox's name", []runtime.Object{newClaim("bob", "sb"), newSandbox("sb", testNode, "", true, false), pod, node}, readyLocal},
		{"v0.5: the annotation names the pod", []runtime.Object{newClaim("bob", "sb"), newSandbox("sb", testNode, "sb", true, false), pod, node}, readyLocal},
		{"v0.5: the annotation names a pod of another name", []runtime.Object{newClaim("bob", "sb"), newSandbox("sb", testNode, "sb-pod", true, false),
			ownedPod("sb-pod", uidA, testNode, "10.0.0.5", true, "sb"), node}, legacyName},
		{"a pod of the Sandbox's name it does not control", []runtime.Object{newClaim("bob", "sb"), newSandbox("sb", testNode, "", true, false),
			ownedPod("sb", uidA, testNode, "10.0.0.5", true, ""), node}, Route{Sandbox: "sb"}},
		{"a pod of the Sandbox's name another Sandbox controls", []runtime.Object{newClaim("bob", "sb"), newSandbox("sb", testNode, "", true, false),
			ownedPod("sb", uidA, testNode, "10.0.0.5", true, "other"), node}, Route{Sandbox: "sb"}},
		{"two controlled pods, one named by the hint", []runtime.Object{newClaim("bob", "sb"), newSandbox("sb", testNode, "", true, false),
			pod, ownedPod("sb-old", uidB, testNode, "10.0.0.6", true, "sb"), node}, readyLocal},
		{"two controlled pods, neither named by the hint", []runtime.Object{newClaim("bob", "sb"), newSandbox("sb", testNode, "", true, false),
			ownedPod("a", uidA, testNode, "10.0.0.5", true, "sb"), ownedPod("b", uidB, testNode, "10.0.0.6", true, "sb"), node}, Route{Sandbox: "sb"}},
		{"not adopted yet", []runtime.Object{newClaim("bob", "")}, Route{}},
		{"sandbox not cached", []runtime.Object{newClaim("bob", "sb")}, Route{Sandbox: "sb"}},
		{"suspended", []runtime.Object{newClaim("bob", "sb"), newSandbox("sb", testNode, "sb", true, true), pod}, Route{State: StateSuspended, Sandbox: "sb"}},
		{"not ready: the pod scheduled", []runtime.Object{newClaim("bob", "sb"), newSandbox("sb", testNode, "sb", false, false), pod}, Route{Sandbox: "sb", Node: testNode}},
		{"pod failed", []runtime.Object{newClaim("bob", "sb"), failed, pod}, Route{State: StateStopped, Sandbox: "sb"}},
		{"v1.0.13: Finished kept after a wake, the new pod Ready", []runtime.Object{newClaim("bob", "sb"), finishedWoken, pod, node}, readyLocal},
		{"v1.0.13: Finished kept while the new pod starts", []runtime.Object{newClaim("bob", "sb"), finishedStarting, pod, node}, Route{Sandbox: "sb", Node: testNode}},
		{"v1.0.13: PodScheduled False (PodAbsent) while suspended", []runtime.Object{newClaim("bob", "sb"), podScheduled(newSandbox("sb", testNode, "", false, true), "PodAbsent")}, Route{State: StateSuspended, Sandbox: "sb"}},
		{"PodScheduled False (Unschedulable): still starting", []runtime.Object{newClaim("bob", "sb"), podScheduled(newSandbox("sb", testNode, "", false, false), "Unschedulable"), node}, Route{Sandbox: "sb", Node: testNode}},
		{"invalid configuration", []runtime.Object{newClaim("bob", "sb"), invalid, pod, node}, Route{State: StateInvalid, Sandbox: "sb"}},
		{"local pod not cached", []runtime.Object{newClaim("bob", "sb"), newSandbox("sb", testNode, "sb", true, false)}, Route{Sandbox: "sb"}},
		{"local pod not ready", []runtime.Object{newClaim("bob", "sb"), newSandbox("sb", testNode, "sb", true, false), newPod("sb", uidA, testNode, "10.0.0.5", false)}, Route{Sandbox: "sb"}},
		{"local pod without IP", []runtime.Object{newClaim("bob", "sb"), newSandbox("sb", testNode, "sb", true, false), newPod("sb", uidA, testNode, "", true)}, Route{Sandbox: "sb"}},
		{"local pod terminating", []runtime.Object{newClaim("bob", "sb"), newSandbox("sb", testNode, "sb", true, false), terminating}, Route{Sandbox: "sb"}},
		{"pod cached for another node", []runtime.Object{newClaim("bob", "sb"), newSandbox("sb", testNode, "sb", true, false), newPod("sb", uidA, "node-b", "10.0.0.5", true)}, Route{Sandbox: "sb"}},
		{"remote node", []runtime.Object{newClaim("bob", "sb"), newSandbox("sb", "node-b", "sb", true, false), otherNode}, Route{State: StateReady, Sandbox: "sb", Node: "node-b", NodeIP: "192.0.2.2"}},
		{"remote node not cached", []runtime.Object{newClaim("bob", "sb"), newSandbox("sb", "node-b", "sb", true, false)}, Route{Sandbox: "sb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := stored(t, tt.objs...)
			e, err := x.Lookup("bob")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, e.Route); diff != "" {
				t.Errorf("route (-want +got):\n%s", diff)
			}
			if e.Account.User != "bob" || e.Account.Epoch != 2 || !e.Account.TokenMatches("tok-bob") {
				t.Errorf("account = %+v", e.Account)
			}
		})
	}
}

func TestIsNodeIP(t *testing.T) {
	x := stored(t, newNode(testNode, "192.0.2.1"), newNode("node-b", "192.0.2.2"))
	for ip, want := range map[string]bool{"192.0.2.1": true, "192.0.2.2": true, "192.0.2.3": false, "": false} {
		if got := x.IsNodeIP(ip); got != want {
			t.Errorf("IsNodeIP(%q) = %v", ip, got)
		}
	}
}

func TestLookupAccountErrors(t *testing.T) {
	wrongLabel := newClaim("bob", "sb")
	wrongLabel.Name = DefaultClaimPrefix + "alice"
	badHash := newClaim("bob", "sb")
	badHash.Annotations["aaas.example.com/token-sha256"] = "nope"
	unmanaged := newClaim("bob", "sb")
	delete(unmanaged.Labels, "aaas.example.com/managed-by")
	tests := []struct {
		name string
		objs []runtime.Object
		user string
		want error
	}{
		{"no claim", nil, "bob", ErrNoAccount},
		{"other user's claim", []runtime.Object{newClaim("alice", "sb")}, "bob", ErrNoAccount},
		{"claim name and user label disagree", []runtime.Object{wrongLabel}, "alice", ErrNoAccount},
		{"malformed token hash", []runtime.Object{badHash}, "bob", ErrInvalidAccount},
		{"unmanaged claim slipped past the selector", []runtime.Object{unmanaged}, "bob", ErrInvalidAccount},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI(t)
			for _, obj := range tt.objs {
				f.create(claimsGVR, obj, testNS)
			}
			_, err := running(t, f.options()).Lookup(tt.user)
			if !errors.Is(err, tt.want) {
				t.Errorf("Lookup(%q) = %v, want %v", tt.user, err, tt.want)
			}
		})
	}
}

// TestLookupBeforeSync: caches that have not listed the claims yet cannot
// say an account is missing; an account they already hold is answered.
func TestLookupBeforeSync(t *testing.T) {
	x := stored(t, newClaim("alice", "sb"))
	if _, err := x.Lookup("bob"); !errors.Is(err, ErrNotSynced) || errors.Is(err, ErrNoAccount) {
		t.Errorf("Lookup(bob) before sync = %v, want ErrNotSynced", err)
	}
	if e, err := x.Lookup("alice"); err != nil || e.Account.User != "alice" {
		t.Errorf("Lookup(alice) before sync = %+v, %v", e.Account, err)
	}
}

func TestTransformsAreIdempotentAndCompact(t *testing.T) {
	x := stored(t)
	transform := sandboxapi.Keep(x.transformClaim)
	c, _ := transform(newClaim("bob", "sb"))
	again, _ := transform(c)
	if again != c {
		t.Error("transforming an entry again changed it")
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "k", Obj: c}
	if got, _ := transform(tomb); got != tomb {
		t.Error("tombstone not passed through")
	}
	if e := c.(*claimEntry); e.namespace != x.opts.Namespace || e.rv != "1" || e.sandbox != "sb" {
		t.Errorf("claim entry = %+v", e)
	}
	// The stripped pod keeps its port from the container spec.
	p := x.transformPod(newPod("sb", uidA, testNode, "10.0.0.5", true))
	if e := p.(*podEntry); e.addr != "10.0.0.5:3080" || e.container != "dsh" {
		t.Errorf("pod entry = %+v", e)
	}
}

func TestOptionsValidate(t *testing.T) {
	good := newFakeAPI(t).options()
	if err := good.Validate(); err != nil {
		t.Fatalf("good options: %v", err)
	}
	bad := Options{Namespace: "Bad_NS", NodeName: "", ClaimPrefix: "X-", Container: "a/b", Port: 70000}
	err := bad.Validate()
	for _, want := range []string{"namespace", "node name", "claim prefix", "container", "port", "list-watchers"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want a %s problem", err, want)
		}
	}
}

// recorder collects change callbacks.
type recorder struct {
	mu    sync.Mutex
	pods  []string
	users []string
}

func (r *recorder) podGone(uid string) { r.mu.Lock(); r.pods = append(r.pods, uid); r.mu.Unlock() }
func (r *recorder) userGone(u string)  { r.mu.Lock(); r.users = append(r.users, u); r.mu.Unlock() }

func (r *recorder) forget() { r.mu.Lock(); r.pods = nil; r.mu.Unlock() }

func (r *recorder) sawPod(uid string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.pods, uid)
}

func (r *recorder) sawUser(u string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.users, u)
}

// running starts an Index on f and stops it when the test ends.
func running(t *testing.T, opts Options) *Index {
	t.Helper()
	withoutWatchList(t)
	x, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	testkit.Run(t, "index", x.Run)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := x.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	return x
}

func TestInformerWiring(t *testing.T) {
	f := newFakeAPI(t)
	rec := &recorder{}
	opts := f.options()
	opts.OnPodGone, opts.OnUserGone = rec.podGone, rec.userGone
	f.create(claimsGVR, newClaim("bob", "sb"), testNS)
	f.create(sandboxesGVR, newSandbox("sb", testNode, "", false, false), testNS)
	f.create(nodesGVR, newNode(testNode, "192.0.2.1"), "")
	x := running(t, opts)

	// A request arriving now waits for the sandbox to become Ready.
	waited := make(chan Entry, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e, err := x.WaitReady(ctx, "bob", "")
		if err != nil {
			t.Error(err)
		}
		waited <- e
	}()
	f.create(podsGVR, newPod("sb", uidA, testNode, "10.0.0.5", true), testNS)
	f.update(sandboxesGVR, newSandbox("sb", testNode, "", true, false), testNS)
	if e := <-waited; e.Route.State != StateReady || e.Route.Pod.UID != uidA {
		t.Fatalf("WaitReady = %+v", e.Route)
	}

	// The pod is replaced under the same name: the old UID is forgotten.
	f.update(podsGVR, newPod("sb", uidB, testNode, "10.0.0.6", true), testNS)
	testkit.Eventually(t, "old pod forgotten", func() bool { return rec.sawPod(uidA) })
	testkit.Eventually(t, "new pod routed", func() bool {
		e, _ := x.Lookup("bob")
		return e.Route.Pod.Addr == "10.0.0.6:3080"
	})

	// Suspending the sandbox forgets its pod before the pod is deleted.
	f.update(sandboxesGVR, newSandbox("sb", testNode, "", true, true), testNS)
	testkit.Eventually(t, "suspended pod forgotten", func() bool { return rec.sawPod(uidB) })
	if e, _ := x.Lookup("bob"); e.Route.State != StateSuspended {
		t.Errorf("state after suspend = %v", e.Route.State)
	}

	// Woken on a new pod, then deleted: the Sandbox's pods are forgotten.
	f.update(podsGVR, newPod("sb", uidA, testNode, "10.0.0.7", true), testNS)
	f.update(sandboxesGVR, newSandbox("sb", testNode, "", true, false), testNS)
	testkit.Eventually(t, "woken pod routed", func() bool {
		e, _ := x.Lookup("bob")
		return e.Route.Pod.Addr == "10.0.0.7:3080"
	})
	rec.forget()
	f.delete(sandboxesGVR, testNS, "sb")
	testkit.Eventually(t, "deleted sandbox's pod forgotten", func() bool { return rec.sawPod(uidA) })

	f.delete(claimsGVR, testNS, DefaultClaimPrefix+"bob")
	testkit.Eventually(t, "user forgotten", func() bool { return rec.sawUser("bob") })
	if _, err := x.Lookup("bob"); !errors.Is(err, ErrNoAccount) {
		t.Errorf("Lookup after claim delete = %v", err)
	}
}

func TestWaitReadyGivesUpWithContext(t *testing.T) {
	f := newFakeAPI(t)
	f.create(claimsGVR, newClaim("bob", "sb"), testNS)
	x := running(t, f.options())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	e, err := x.WaitReady(ctx, "bob", "")
	if !errors.Is(err, context.DeadlineExceeded) || e.Route.State != StatePending {
		t.Errorf("WaitReady = %+v, %v", e.Route, err)
	}
	if _, err := x.WaitReady(context.Background(), "nobody", ""); !errors.Is(err, ErrNoAccount) {
		t.Errorf("WaitReady(nobody) = %v", err)
	}
}

// TestWatchAccount: a user's watchers hear of every change of the user's
// claim once the cache holds it, and of nobody else's; stop ends a watch.
func TestWatchAccount(t *testing.T) {
	f := newFakeAPI(t)
	f.create(claimsGVR, newClaim("bob", "sb"), testNS)
	f.create(claimsGVR, newClaim("alice", "sa"), testNS)
	x := running(t, f.options())

	bobEpochs := make(chan int64, 10)
	stopBob := x.WatchAccount("bob", func() {
		e, err := x.Lookup("bob")
		if err != nil {
			bobEpochs <- -1
			return
		}
		bobEpochs <- e.Account.Epoch
	})
	alice := make(chan struct{}, 10)
	stopAlice := x.WatchAccount("alice", func() { alice <- struct{}{} })
	defer stopAlice()

	c := newClaim("bob", "sb")
	c.ResourceVersion, c.Annotations[account.AnnotationSessionEpoch] = "2", "3"
	f.update(claimsGVR, c, testNS)
	if got := testkit.Receive(t, "bob's epoch raise", bobEpochs); got != 3 {
		t.Errorf("bob's watcher saw epoch %d, want 3", got)
	}
	f.delete(claimsGVR, testNS, DefaultClaimPrefix+"bob")
	if got := testkit.Receive(t, "bob's delete", bobEpochs); got != -1 {
		t.Errorf("bob's watcher saw epoch %d after the delete, want no account", got)
	}
	if len(alice) != 0 {
		t.Errorf("alice's watcher heard of bob's changes %d times", len(alice))
	}

	stopBob()
	f.create(claimsGVR, newClaim("bob", "sb"), testNS)
	a := newClaim("alice", "sa")
	a.ResourceVersion = "2"
	f.update(claimsGVR, a, testNS)
	testkit.Receive(t, "alice's update", alice)
	if len(bobEpochs) != 0 {
		t.Errorf("bob's stopped watcher was called %d times", len(bobEpochs))
	}
}
