// Package simtest starts a simulated agent-sandbox cluster (internal/testing/sim)
// against a test's control plane, in a namespace of its own with a template
// and a warm pool, and offers the waits tests need. Tests only.
package simtest

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/clustertest"
	"github.com/sandgate/sandgate/internal/testing/sim/cluster"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// PoolName is the warm pool every Env creates.
const PoolName = "dsh-pool"

// Env is a simulated cluster in a namespace of its own, with a template
// and a warm pool.
type Env struct {
	T       *testing.T
	NS      string
	Core    kubernetes.Interface
	SB      *sandboxapi.Client
	Cluster *cluster.Cluster
	DataDir string
}

// Options shape an Env.
type Options struct {
	// Replicas is the warm pool size.
	Replicas int32
	Delays   controller.Delays
	// TrustedHosts is the pods' DSH_TRUSTED_HOSTS value.
	TrustedHosts string
	// Release is the agent-sandbox release the stand-in controller
	// behaves as; empty means controller.ReleaseV1.
	Release controller.Release
}

// Start creates a namespace, starts a 2-node simulated cluster watching it,
// and creates the template and pool; everything stops when the test ends.
func Start(t *testing.T, cp *controlplane.ControlPlane, o Options) *Env {
	t.Helper()
	ns := clustertest.Namespace(t, cp)
	dir := t.TempDir()
	c, err := cluster.Start(t.Context(), cluster.Options{
		Config: cp.AdminConfig(), Name: ns, Namespaces: []string{ns}, Nodes: 2,
		LogDir: filepath.Join(dir, "logs"), DataDir: filepath.Join(dir, "data"), Delays: o.Delays, Release: o.Release,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop cluster: %v", err)
		}
	})
	core, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sandboxapi.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{T: t, NS: ns, Core: core, SB: sb, Cluster: c, DataDir: filepath.Join(dir, "data")}
	if o.TrustedHosts == "" {
		o.TrustedHosts = "gateway.example"
	}
	e.createPool(o.Replicas, o.TrustedHosts)
	return e
}

func (e *Env) createPool(replicas int32, trusted string) {
	e.T.Helper()
	if err := cluster.CreatePool(e.T.Context(), e.SB, e.NS, PoolName, replicas, trusted); err != nil {
		e.T.Fatal(err)
	}
}

// CreateClaim creates a claim on the Env's pool.
func (e *Env) CreateClaim(name string, meta agents.PodMetadata) *extensions.SandboxClaim {
	e.T.Helper()
	return e.CreateClaimOn(PoolName, name, meta)
}

// CreateClaimOn creates a claim on the named warm pool, which need not
// exist.
func (e *Env) CreateClaimOn(pool, name string, meta agents.PodMetadata) *extensions.SandboxClaim {
	e.T.Helper()
	claim, err := e.SB.SandboxClaims(e.NS).Create(e.T.Context(), &extensions.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       extensions.SandboxClaimSpec{WarmPoolRef: extensions.WarmPoolRef{Name: pool}, AdditionalPodMetadata: meta},
	}, metav1.CreateOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	return claim
}

// Eventually polls f every 50ms for up to timeout; f returns "" when
// satisfied, else what it is still waiting for.
func (e *Env) Eventually(timeout time.Duration, f func() string) {
	e.T.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		if last = f(); last == "" {
			return
		}
		if time.Now().After(deadline) {
			e.T.Fatalf("after %v: %s", timeout, last)
		}
		select {
		case <-e.T.Context().Done():
			e.T.Fatal("test ended while waiting: " + last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Claim gets a claim.
func (e *Env) Claim(name string) *extensions.SandboxClaim {
	c, err := e.SB.SandboxClaims(e.NS).Get(e.T.Context(), name, metav1.GetOptions{})
	if err != nil {
		e.T.Fatal(err)
	}
	return c
}

// Sandbox gets a Sandbox.
func (e *Env) Sandbox(name string) (*agents.Sandbox, error) {
	return e.SB.Sandboxes(e.NS).Get(e.T.Context(), name, metav1.GetOptions{})
}

// Pod gets a pod.
func (e *Env) Pod(name string) (*corev1.Pod, error) {
	return e.Core.CoreV1().Pods(e.NS).Get(e.T.Context(), name, metav1.GetOptions{})
}

// Condition returns the condition of type typ, or a zero one.
func Condition(conds []metav1.Condition, typ string) metav1.Condition {
	for _, c := range conds {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// WaitClaimReady waits for the claim's Ready condition and returns the claim.
func (e *Env) WaitClaimReady(name string, timeout time.Duration) *extensions.SandboxClaim {
	e.T.Helper()
	var c *extensions.SandboxClaim
	e.Eventually(timeout, func() string {
		c = e.Claim(name)
		if r := Condition(c.Status.Conditions, agents.ConditionReady); r.Status != metav1.ConditionTrue {
			return fmt.Sprintf("claim %s not Ready: %+v", name, r)
		}
		return ""
	})
	return c
}

// ReadyPod waits for the claim's Ready condition and returns the pod of
// its Sandbox, which bears the Sandbox's name.
func (e *Env) ReadyPod(claim string) *corev1.Pod {
	e.T.Helper()
	pod, err := e.Pod(e.WaitClaimReady(claim, testkit.Timeout).Status.Sandbox.Name)
	if err != nil {
		e.T.Fatalf("get the pod of claim %s: %v", claim, err)
	}
	return pod
}

// WaitPool waits until the pool reports ready spares.
func (e *Env) WaitPool(ready int32) {
	e.T.Helper()
	e.Eventually(30*time.Second, func() string {
		p, err := e.SB.SandboxWarmPools(e.NS).Get(e.T.Context(), PoolName, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if p.Status.ReadyReplicas != ready || p.Status.Replicas != ready {
			return fmt.Sprintf("pool status %+v, want %d ready", p.Status, ready)
		}
		return ""
	})
}

// Cookie performs sandgate's handshake with the pod: the launch token comes
// from the pod's log files on its node, nothing else.
func (e *Env) Cookie(pod *corev1.Pod, user string) string {
	e.T.Helper()
	h, err := handshake.New(handshake.Options{LogRoot: e.Cluster.Kubelet.LogRoot(pod.Spec.NodeName)})
	if err != nil {
		e.T.Fatal(err)
	}
	defer h.Close()
	ck, err := h.Cookie(e.T.Context(), handshake.Target{
		User: user, Namespace: pod.Namespace, Pod: pod.Name, PodUID: string(pod.UID),
		Container: "dsh", Addr: pod.Status.PodIP + ":3080",
	})
	if err != nil {
		e.T.Fatalf("handshake: %v", err)
	}
	return ck
}

// SetMode patches the Sandbox's spec.operatingMode, as the platform does.
func (e *Env) SetMode(name string, mode agents.OperatingMode) {
	e.T.Helper()
	body := fmt.Sprintf(`{"spec":{"operatingMode":%q}}`, mode)
	if _, err := e.SB.Sandboxes(e.NS).Patch(e.T.Context(), name, types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
		e.T.Fatal(err)
	}
}
