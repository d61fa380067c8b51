package egress

import (
	"encoding/hex"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// sandboxPod is a user's sandbox in the simulated cluster: its pod's
// loopback address, which the test's client binds to as the pod would
// send from it, and its node.
type sandboxPod struct {
	user, sandbox, ip, node string
}

// claimSandbox creates user's managed claim on the warm pool, as the auth
// API would, and waits for its pod.
func claimSandbox(t *testing.T, e *simtest.Env, user string) sandboxPod {
	t.Helper()
	h := account.HashToken("tok-" + user)
	name := informer.DefaultClaimPrefix + user
	_, err := e.SB.SandboxClaims(e.NS).Create(t.Context(), &extensions.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{account.LabelManagedBy: account.ManagedByValue, account.LabelUser: user},
			Annotations: map[string]string{account.AnnotationTokenHash: hex.EncodeToString(h[:]), account.AnnotationSessionEpoch: "1"},
		},
		Spec: extensions.SandboxClaimSpec{WarmPoolRef: extensions.WarmPoolRef{Name: simtest.PoolName}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := e.WaitClaimReady(name, testkit.Timeout)
	sb, err := e.Sandbox(c.Status.Sandbox.Name)
	if err != nil {
		t.Fatal(err)
	}
	pod, err := e.Pod(sb.Name) // the controller names the pod after its Sandbox
	if err != nil {
		t.Fatal(err)
	}
	return sandboxPod{user: user, sandbox: sb.Name, ip: pod.Status.PodIP, node: pod.Spec.NodeName}
}

// TestIntegrationSimulatedCluster: on a real API server with the simulated
// cluster, the egress proxy of one node knows its sandboxes by their pod
// IPs through the informer caches: its user's call arrives with the real
// key, a sandbox of the other node, a stranger and a suspended user are
// refused.
func TestIntegrationSimulatedCluster(t *testing.T) {
	e := simtest.Start(t, testkit.ControlPlane(t), simtest.Options{Replicas: 2})
	e.WaitPool(2)
	alice := claimSandbox(t, e, "alice")
	bob := claimSandbox(t, e, "bob")

	idx, err := informer.New(informer.Options{
		Namespace: e.NS, NodeName: alice.node,
		Claims: e.SB.SandboxClaims(e.NS), Sandboxes: e.SB.Sandboxes(e.NS),
		Pods: e.Core.CoreV1().Pods(e.NS), Nodes: e.Core.CoreV1().Nodes(),
	})
	if err != nil {
		t.Fatal(err)
	}
	callers, err := idx.Callers()
	if err != nil {
		t.Fatal(err)
	}
	testkit.Run(t, "index", idx.Run)
	if err := idx.WaitForSync(t.Context()); err != nil {
		t.Fatal(err)
	}

	env := newEnv(t, func(o *Options) { o.Callers = callers })
	status := func(ip string) int {
		s, _ := read(t, env.call(ip, "/openai/chat/completions", completion))
		return s
	}
	testkit.Eventually(t, "alice known by her pod IP", func() bool { return status(alice.ip) == http.StatusOK })
	reqs := env.provider.requests()
	if a := reqs[len(reqs)-1].Header.Get("Authorization"); a != "Bearer sk-real-shared-1" {
		t.Errorf("provider got %q, want the real key", a)
	}
	t.Logf("alice on %s, bob on %s", alice.node, bob.node)
	wantBob := http.StatusOK
	if bob.node != alice.node {
		wantBob = http.StatusForbidden // another node's sandbox: its own node proxy serves it
	}
	if s := status(bob.ip); s != wantBob {
		t.Errorf("bob (node %s, this proxy on %s) = %d, want %d", bob.node, alice.node, s, wantBob)
	}
	if s := status(strangerIP); s != http.StatusForbidden {
		t.Errorf("stranger = %d, want 403", s)
	}
	e.SetMode(alice.sandbox, agents.OperatingModeSuspended)
	testkit.Eventually(t, "suspended alice refused", func() bool { return status(alice.ip) == http.StatusForbidden })
}
