package informer

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/clustertest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// countingTransport counts requests sent to the API server.
type countingTransport struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// TestIntegrationIndex runs the Index as a read-only ServiceAccount against
// the real API server: selectors, status-driven routing, change callbacks,
// and no API request per lookup.
func TestIntegrationIndex(t *testing.T) {
	n := testkit.NewNamespace(t)
	c, ns, admin, sbAdmin := n.CP, n.Name, n.Kube, n.SB
	ctx := t.Context()
	clustertest.GrantNodeProxy(t, admin, ns)
	cfg, err := c.ServiceAccountConfig(ctx, ns, "nodeproxy")
	if err != nil {
		t.Fatal(err)
	}
	var requests atomic.Int64
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countingTransport{rt, &requests} }

	// Node names are cluster-wide: make them unique to this test.
	local, remote := ns+"-a", ns+"-b"
	for name, ip := range map[string]string{local: "127.0.10.1", remote: "127.0.10.2"} {
		node := newNode(name, ip)
		node.ResourceVersion = ""
		testkit.CreateWithStatus(t, admin.CoreV1().Nodes(), node, func(n *corev1.Node) {
			n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}}
		})
	}
	claims := sbAdmin.SandboxClaims(ns)
	sandboxes := sbAdmin.Sandboxes(ns)
	pods := admin.CoreV1().Pods(ns)
	mkClaim := func(user, sandbox string, managed bool) {
		cl := newClaim(user, sandbox)
		cl.Namespace, cl.ResourceVersion = ns, ""
		if !managed {
			cl.Labels = map[string]string{"aaas.example.com/user": user}
		}
		testkit.CreateWithStatus(t, claims, cl, func(got *extensions.SandboxClaim) { got.Status = cl.Status })
	}
	setSandbox := func(name, node, pod string, ready, suspended bool) types.UID {
		want := newSandbox(name, node, pod, ready, suspended)
		want.Namespace, want.ResourceVersion = ns, ""
		want.Spec.PodTemplate = agents.PodTemplate{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "dsh", Image: "dsh"}}}}
		cur, err := sandboxes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if cur, err = sandboxes.Create(ctx, want, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		} else {
			cur.Spec.OperatingMode = want.Spec.OperatingMode
			cur.Annotations = want.Annotations
			if cur, err = sandboxes.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		cur.Status = want.Status
		if _, err := sandboxes.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return cur.UID
	}
	// mkPod makes a pod controlled by the Sandbox with owner, as the
	// controller does.
	mkPod := func(name, node, ip string, owner types.UID) string {
		p := newPod(name, "", node, ip, true)
		p.Namespace, p.ResourceVersion = ns, ""
		p.OwnerReferences[0].UID = owner
		return string(testkit.CreateWithStatus(t, pods, p, func(got *corev1.Pod) { got.Status = p.Status }).UID)
	}

	mkClaim("bob", "sb-bob", true)
	mkClaim("carol", "sb-carol", true)
	mkClaim("mallory", "sb-mallory", false)
	bobSandbox := setSandbox("sb-bob", local, "", true, false)
	carolSandbox := setSandbox("sb-carol", remote, "sb-carol", true, false)
	bobUID := mkPod("sb-bob", local, "127.0.20.1", bobSandbox)
	mkPod("sb-carol", remote, "127.0.20.2", carolSandbox)

	kube, sb := testkit.Clients(t, cfg)
	gone := make(chan string, 10)
	x, err := New(Options{
		Namespace: ns, NodeName: local,
		Claims: sb.SandboxClaims(ns), Sandboxes: sb.Sandboxes(ns),
		Pods: kube.CoreV1().Pods(ns), Nodes: kube.CoreV1().Nodes(),
		OnPodGone: func(uid string) { gone <- uid },
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); x.Run(runCtx) }()
	defer func() { cancel(); <-done }()
	syncCtx, scancel := context.WithTimeout(ctx, 30*time.Second)
	defer scancel()
	if err := x.WaitForSync(syncCtx); err != nil {
		t.Fatal(err)
	}

	testkit.Eventually(t, "bob routed locally", func() bool {
		e, err := x.Lookup("bob")
		return err == nil && e.Route.State == StateReady && e.Route.Local && e.Route.Pod.Addr == "127.0.20.1:3080" && e.Route.Pod.UID == bobUID
	})
	testkit.Eventually(t, "carol routed to the other node", func() bool {
		e, err := x.Lookup("carol")
		return err == nil && e.Route.State == StateReady && !e.Route.Local && e.Route.NodeIP == "127.0.10.2"
	})
	if _, err := x.Lookup("mallory"); !errors.Is(err, ErrNoAccount) {
		t.Errorf("unmanaged claim: Lookup = %v, want ErrNoAccount", err)
	}
	if n := len(x.pods.GetStore().ListKeys()); n != 1 {
		t.Errorf("pod cache holds %d pods, want only this node's 1", n)
	}

	before := requests.Load()
	for range 1000 {
		if e, err := x.Lookup("bob"); err != nil || e.Route.State != StateReady {
			t.Fatalf("Lookup = %+v, %v", e.Route, err)
		}
	}
	if n := requests.Load() - before; n != 0 {
		t.Errorf("1000 lookups made %d API requests, want 0", n)
	}

	setSandbox("sb-bob", local, "", true, true)
	if uid := testkit.Receive(t, "bob's pod forgotten on suspend", gone); uid != bobUID {
		t.Errorf("forgot pod %s, want %s", uid, bobUID)
	}
	testkit.Eventually(t, "bob suspended", func() bool {
		e, _ := x.Lookup("bob")
		return e.Route.State == StateSuspended
	})
}
