package informer

import (
	"errors"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestCallerByIP(t *testing.T) {
	node := newNode(testNode, "192.0.2.1")
	claim := newClaim("bob", "sb")
	sandbox := newSandbox("sb", testNode, "sb", true, false)
	pod := newPod("sb", uidA, testNode, "10.0.0.5", true)
	bob := Caller{User: "bob", Sandbox: "sb", Pod: "sb"}

	notReady := newPod("sb", uidA, testNode, "10.0.0.5", false)
	terminating := newPod("sb", uidA, testNode, "10.0.0.5", true)
	now := metav1.Now()
	terminating.DeletionTimestamp = &now
	otherNodePod := newPod("sb", uidA, "node-b", "10.0.0.5", true)
	hostNet := newPod("sb", uidA, testNode, "192.0.2.1", true)
	twin := newPod("twin", uidB, testNode, "10.0.0.5", true)
	deleting := newClaim("bob", "sb")
	deleting.DeletionTimestamp = &now
	deleting.Finalizers = []string{"x"}
	unmanaged := newClaim("bob", "sb")
	unmanaged.Labels = map[string]string{}
	invalid := newSandbox("sb", testNode, "", true, false)
	invalid.Status.Conditions[0] = metav1.Condition{Type: agents.ConditionReady, Status: metav1.ConditionFalse, Reason: agents.ReasonInvalidConfiguration}
	impostor := newClaim("bob", "sb")
	impostor.Name = "other-bob"
	budgeted := newClaim("bob", "sb")
	budgeted.Annotations[account.AnnotationEgressTokensPerDay] = "5000"
	perDay := int64(5000)
	malformed := newClaim("bob", "sb")
	malformed.Annotations[account.AnnotationEgressTokensPerDay] = "5k"

	tests := []struct {
		name string
		ip   string
		objs []runtime.Object
		want Caller
	}{
		{"running sandbox pod of a managed claim", "10.0.0.5", []runtime.Object{node, claim, sandbox, pod}, bob},
		{"v1.0: a sandbox without the pod-name annotation", "10.0.0.5", []runtime.Object{node, claim, newSandbox("sb", testNode, "", true, false), pod}, bob},
		{"v0.5: a pod of another name its sandbox controls", "10.0.0.5", []runtime.Object{node, claim, newSandbox("sb", testNode, "sb-pod", true, false),
			ownedPod("sb-pod", uidA, testNode, "10.0.0.5", true, "sb")}, Caller{User: "bob", Sandbox: "sb", Pod: "sb-pod"}},
		{"a pod of the sandbox's name it does not control", "10.0.0.5", []runtime.Object{node, claim, sandbox, ownedPod("sb", uidA, testNode, "10.0.0.5", true, "")}, Caller{}},
		{"a pod of the sandbox's name another sandbox controls", "10.0.0.5", []runtime.Object{node, claim, sandbox, ownedPod("sb", uidA, testNode, "10.0.0.5", true, "other")}, Caller{}},
		{"sandbox of invalid configuration", "10.0.0.5", []runtime.Object{node, claim, invalid, pod}, Caller{}},
		{"unknown address", "10.0.0.9", []runtime.Object{node, claim, sandbox, pod}, Caller{}},
		{"empty address", "", []runtime.Object{node, claim, sandbox, pod}, Caller{}},
		{"node address (host network)", "192.0.2.1", []runtime.Object{node, claim, sandbox, hostNet}, Caller{}},
		{"pod not ready", "10.0.0.5", []runtime.Object{node, claim, sandbox, notReady}, Caller{}},
		{"pod terminating", "10.0.0.5", []runtime.Object{node, claim, sandbox, terminating}, Caller{}},
		{"pod of another node", "10.0.0.5", []runtime.Object{node, claim, sandbox, otherNodePod}, Caller{}},
		{"two pods on one address", "10.0.0.5", []runtime.Object{node, claim, sandbox, pod, twin}, Caller{}},
		{"pod of no sandbox", "10.0.0.5", []runtime.Object{node, claim, pod}, Caller{}},
		{"suspended sandbox", "10.0.0.5", []runtime.Object{node, claim, newSandbox("sb", testNode, "sb", true, true), pod}, Caller{}},
		{"sandbox on another node", "10.0.0.5", []runtime.Object{node, claim, newSandbox("sb", "node-b", "sb", true, false), pod}, Caller{}},
		{"no claim (deleted user)", "10.0.0.5", []runtime.Object{node, sandbox, pod}, Caller{}},
		{"claim being deleted", "10.0.0.5", []runtime.Object{node, deleting, sandbox, pod}, Caller{}},
		{"claim not managed", "10.0.0.5", []runtime.Object{node, unmanaged, sandbox, pod}, Caller{}},
		{"claim not named for its user", "10.0.0.5", []runtime.Object{node, impostor, sandbox, pod}, Caller{}},
		{"an admin's egress budget on the claim", "10.0.0.5", []runtime.Object{node, budgeted, sandbox, pod},
			Caller{User: "bob", Sandbox: "sb", Pod: "sb", TokensPerDay: &perDay}},
		{"a malformed egress budget is none", "10.0.0.5", []runtime.Object{node, malformed, sandbox, pod}, bob},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := runningCallers(t, tt.objs...)
			got, err := c.ByIP(tt.ip)
			if tt.want.User == "" {
				if !errors.Is(err, ErrUnknownCaller) {
					t.Fatalf("CallerByIP(%q) = %+v, %v; want ErrUnknownCaller", tt.ip, got, err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("CallerByIP(%q) = %+v, %v; want %+v", tt.ip, got, err, tt.want)
			}
		})
	}
}

// runningCallers builds Callers on a running Index over a fake API server
// holding objs, once it has been fed all of them.
func runningCallers(t *testing.T, objs ...runtime.Object) *Callers {
	t.Helper()
	f := newFakeAPI(t)
	for _, obj := range objs {
		switch o := obj.(type) {
		case *corev1.Node:
			f.create(nodesGVR, o, "")
		case *corev1.Pod:
			f.create(podsGVR, o, testNS)
		case *agents.Sandbox:
			f.create(sandboxesGVR, o, testNS)
		case *extensions.SandboxClaim:
			f.create(claimsGVR, o, testNS)
		default:
			t.Fatalf("unexpected %T", obj)
		}
	}
	c, err := running(t, f.options()).Callers()
	if err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "callers fed", func() bool {
		_, err := c.ByIP("")
		return !errors.Is(err, ErrNotSynced)
	})
	return c
}

// TestCallersBeforeSync: before the caches have listed everything, no
// address can be judged, a sandbox's included.
func TestCallersBeforeSync(t *testing.T) {
	x := stored(t, newNode(testNode, "192.0.2.1"), newClaim("bob", "sb"), newSandbox("sb", testNode, "sb", true, false),
		newPod("sb", uidA, testNode, "10.0.0.5", true))
	c, err := x.Callers()
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range []string{"10.0.0.5", "10.0.0.9", "192.0.2.1"} {
		if got, err := c.ByIP(ip); !errors.Is(err, ErrNotSynced) || errors.Is(err, ErrUnknownCaller) {
			t.Errorf("ByIP(%q) before sync = %+v, %v; want ErrNotSynced", ip, got, err)
		}
	}
}

// TestCallersFollowInformers: Callers built on a running Index sees what
// the informers already held and every later change: a pod replaced on a
// new address, a suspension, the claim's deletion.
func TestCallersFollowInformers(t *testing.T) {
	f := newFakeAPI(t)
	f.create(nodesGVR, newNode(testNode, "192.0.2.1"), "")
	f.create(claimsGVR, newClaim("bob", "sb"), testNS)
	f.create(sandboxesGVR, newSandbox("sb", testNode, "sb", true, false), testNS)
	f.create(podsGVR, newPod("sb", uidA, testNode, "10.0.0.5", true), testNS)
	x := running(t, f.options())
	c, err := x.Callers()
	if err != nil {
		t.Fatal(err)
	}
	user := func(ip string) string {
		got, err := c.ByIP(ip)
		if err != nil {
			return ""
		}
		return got.User
	}
	testkit.Eventually(t, "bob known by address", func() bool { return user("10.0.0.5") == "bob" })

	f.update(podsGVR, newPod("sb", uidB, testNode, "10.0.0.6", true), testNS)
	testkit.Eventually(t, "bob known by the new address", func() bool { return user("10.0.0.6") == "bob" })
	if u := user("10.0.0.5"); u != "" {
		t.Errorf("old address still belongs to %q", u)
	}

	f.update(sandboxesGVR, newSandbox("sb", testNode, "sb", true, true), testNS)
	testkit.Eventually(t, "suspended sandbox refused", func() bool { return user("10.0.0.6") == "" })
	f.update(sandboxesGVR, newSandbox("sb", testNode, "sb", true, false), testNS)
	testkit.Eventually(t, "woken sandbox known", func() bool { return user("10.0.0.6") == "bob" })

	f.delete(claimsGVR, testNS, DefaultClaimPrefix+"bob")
	testkit.Eventually(t, "deleted account refused", func() bool { return user("10.0.0.6") == "" })
}
