package informer

import (
	"context"
	"encoding/hex"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

const (
	testNS   = "tenants"
	testNode = "node-a"
	uidA     = "0b6e2a5c-3f1d-4e8a-9c7b-1a2b3c4d5e6f"
	uidB     = "1c7f3b6d-4a2e-4f9b-8d8c-2b3c4d5e6f70"
)

func tokenHash(tok string) string {
	h := account.HashToken(tok)
	return hex.EncodeToString(h[:])
}

// newClaim is bob's managed claim that adopted sandbox.
func newClaim(user, sandbox string) *extensions.SandboxClaim {
	return &extensions.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: DefaultClaimPrefix + user, Namespace: testNS, ResourceVersion: "1",
			Labels:      map[string]string{account.LabelManagedBy: account.ManagedByValue, account.LabelUser: user},
			Annotations: map[string]string{account.AnnotationTokenHash: tokenHash("tok-" + user), account.AnnotationSessionEpoch: "2"},
		},
		Spec:   extensions.SandboxClaimSpec{WarmPoolRef: extensions.WarmPoolRef{Name: "pool"}},
		Status: extensions.SandboxClaimStatus{Sandbox: extensions.ClaimedSandbox{Name: sandbox}},
	}
}

// newSandbox is a Sandbox on node; a non-empty pod is v0.5.x's pod-name
// annotation, which v1.0 no longer writes.
func newSandbox(name, node, pod string, ready, suspended bool) *agents.Sandbox {
	s := &agents.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, ResourceVersion: "1", UID: sandboxUID(name)},
		Spec:       agents.SandboxSpec{OperatingMode: agents.OperatingModeRunning},
		Status:     agents.SandboxStatus{NodeName: node},
	}
	if pod != "" {
		s.Annotations = map[string]string{agents.AnnotationPodName: pod}
	}
	if suspended {
		s.Spec.OperatingMode = agents.OperatingModeSuspended
	}
	status := metav1.ConditionFalse
	if ready {
		status = metav1.ConditionTrue
	}
	s.Status.Conditions = []metav1.Condition{{Type: agents.ConditionReady, Status: status, Reason: "x", LastTransitionTime: metav1.Now()}}
	return s
}

// sandboxUID is the UID newSandbox gives the Sandbox called name.
func sandboxUID(name string) types.UID { return types.UID("uid-of-sandbox-" + name) }

// newPod is a pod controlled by the Sandbox of its own name, as the
// controller makes them.
func newPod(name, uid, node, ip string, ready bool) *corev1.Pod {
	return ownedPod(name, uid, node, ip, ready, name)
}

// ownedPod is a pod controlled by the Sandbox called sandbox; "" makes a
// pod no Sandbox controls.
func ownedPod(name, uid, node, ip string, ready bool, sandbox string) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	var owners []metav1.OwnerReference
	if sandbox != "" {
		yes := true
		owners = []metav1.OwnerReference{{APIVersion: agents.GroupVersion.String(), Kind: "Sandbox",
			Name: sandbox, UID: sandboxUID(sandbox), Controller: &yes}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: types.UID(uid), ResourceVersion: "1", OwnerReferences: owners},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{
			Name: "dsh", Image: "dsh", Ports: []corev1.ContainerPort{{ContainerPort: 3080}},
		}}},
		Status: corev1.PodStatus{PodIP: ip, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}},
	}
}

func newNode(name, ip string) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
		Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}},
	}
}

// trackerLW serves List and Watch of one resource from a client-go object
// tracker, standing in for a typed client.
type trackerLW[L runtime.Object] struct {
	tracker clienttesting.ObjectTracker
	gvr     schema.GroupVersionResource
	gvk     schema.GroupVersionKind // of the items
	ns      string
}

func (lw trackerLW[L]) List(_ context.Context, opts metav1.ListOptions) (L, error) {
	obj, err := lw.tracker.List(lw.gvr, lw.gvk, lw.ns, opts)
	if err != nil {
		var zero L
		return zero, err
	}
	return obj.(L), nil
}

func (lw trackerLW[L]) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return lw.tracker.Watch(lw.gvr, lw.ns, opts)
}

// fakeAPI holds every kind the Index watches: pods and nodes in client-go's
// fake clientset, claims and Sandboxes in an object tracker with our scheme.
type fakeAPI struct {
	t       testing.TB
	kube    *fake.Clientset
	tracker clienttesting.ObjectTracker
}

var (
	claimsGVR    = extensions.GroupVersion.WithResource("sandboxclaims")
	sandboxesGVR = agents.GroupVersion.WithResource("sandboxes")
	podsGVR      = corev1.SchemeGroupVersion.WithResource("pods")
	nodesGVR     = corev1.SchemeGroupVersion.WithResource("nodes")
)

func newFakeAPI(t testing.TB) *fakeAPI {
	t.Helper()
	s, err := sandboxapi.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	return &fakeAPI{
		t:       t,
		kube:    fake.NewClientset(),
		tracker: clienttesting.NewObjectTracker(s, serializer.NewCodecFactory(s).UniversalDecoder()),
	}
}

func (f *fakeAPI) options() Options {
	return Options{
		Namespace: testNS,
		NodeName:  testNode,
		Claims:    trackerLW[*extensions.SandboxClaimList]{f.tracker, claimsGVR, extensions.GroupVersion.WithKind("SandboxClaim"), testNS},
		Sandboxes: trackerLW[*agents.SandboxList]{f.tracker, sandboxesGVR, agents.GroupVersion.WithKind("Sandbox"), testNS},
		Pods:      f.kube.CoreV1().Pods(testNS),
		Nodes:     f.kube.CoreV1().Nodes(),
	}
}

// trackerFor is where objects of gvr live.
func (f *fakeAPI) trackerFor(gvr schema.GroupVersionResource) clienttesting.ObjectTracker {
	if gvr.Group == "" {
		return f.kube.Tracker()
	}
	return f.tracker
}

func (f *fakeAPI) create(gvr schema.GroupVersionResource, obj runtime.Object, ns string) {
	f.t.Helper()
	if err := f.trackerFor(gvr).Create(gvr, obj, ns); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeAPI) update(gvr schema.GroupVersionResource, obj runtime.Object, ns string) {
	f.t.Helper()
	if err := f.trackerFor(gvr).Update(gvr, obj, ns); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fakeAPI) delete(gvr schema.GroupVersionResource, ns, name string) {
	f.t.Helper()
	if err := f.trackerFor(gvr).Delete(gvr, ns, name); err != nil {
		f.t.Fatal(err)
	}
}
