package cluster_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/sandgate/sandgate/internal/clustertest"
	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/sim/cluster"
	"github.com/sandgate/sandgate/internal/sim/controller"
)

const poolName = "dsh-pool"

// env is a simulated cluster in a namespace of its own, with a template
// and a warm pool.
type env struct {
	t       *testing.T
	ns      string
	core    kubernetes.Interface
	sb      *sandboxapi.Client
	cluster *cluster.Cluster
	dataDir string
}

func start(t *testing.T, replicas int32, delays controller.Delays) *env {
	t.Helper()
	ns := clustertest.Namespace(t, cp)
	dir := t.TempDir()
	c, err := cluster.Start(t.Context(), cluster.Options{
		Config: cp.AdminConfig(), Name: ns, Namespaces: []string{ns}, Nodes: 2,
		LogDir: filepath.Join(dir, "logs"), DataDir: filepath.Join(dir, "data"), Delays: delays,
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
	e := &env{t: t, ns: ns, core: core, sb: sb, cluster: c, dataDir: filepath.Join(dir, "data")}
	e.createPool(replicas)
	return e
}

func (e *env) createPool(replicas int32) {
	e.t.Helper()
	tmpl := &extensions.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "dsh"},
		Spec: extensions.SandboxTemplateSpec{
			PodTemplate: agents.PodTemplate{
				Metadata: agents.PodMetadata{Labels: map[string]string{"app": "dsh"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "dsh", Image: "example/dsh:1",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 3080, Protocol: corev1.ProtocolTCP}},
					Env:   []corev1.EnvVar{{Name: "DSH_TRUSTED_HOSTS", Value: "gateway.example"}},
				}}},
			},
			VolumeClaimTemplates: []agents.PersistentVolumeClaimTemplate{{
				Metadata: agents.VolumeClaimMetadata{Name: "dsh-home"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
			Service: ptr.To(true),
		},
	}
	if _, err := e.sb.SandboxTemplates(e.ns).Create(e.t.Context(), tmpl, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	pool := &extensions.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Name: poolName},
		Spec:       extensions.SandboxWarmPoolSpec{Replicas: replicas, SandboxTemplateRef: extensions.TemplateRef{Name: "dsh"}},
	}
	if _, err := e.sb.SandboxWarmPools(e.ns).Create(e.t.Context(), pool, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) createClaim(name string, meta agents.PodMetadata) *extensions.SandboxClaim {
	e.t.Helper()
	claim, err := e.sb.SandboxClaims(e.ns).Create(e.t.Context(), &extensions.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       extensions.SandboxClaimSpec{WarmPoolRef: extensions.WarmPoolRef{Name: poolName}, AdditionalPodMetadata: meta},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return claim
}

// eventually polls f every 50ms for up to timeout; f returns "" when
// satisfied, else what it is still waiting for.
func (e *env) eventually(timeout time.Duration, f func() string) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		if last = f(); last == "" {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("after %v: %s", timeout, last)
		}
		select {
		case <-e.t.Context().Done():
			e.t.Fatal("test ended while waiting: " + last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (e *env) claim(name string) *extensions.SandboxClaim {
	c, err := e.sb.SandboxClaims(e.ns).Get(e.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func (e *env) sandbox(name string) (*agents.Sandbox, error) {
	return e.sb.Sandboxes(e.ns).Get(e.t.Context(), name, metav1.GetOptions{})
}

func (e *env) pod(name string) (*corev1.Pod, error) {
	return e.core.CoreV1().Pods(e.ns).Get(e.t.Context(), name, metav1.GetOptions{})
}

func condition(conds []metav1.Condition, typ string) metav1.Condition {
	for _, c := range conds {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

// waitClaimReady waits for the claim's Ready condition and returns the claim.
func (e *env) waitClaimReady(name string, timeout time.Duration) *extensions.SandboxClaim {
	e.t.Helper()
	var c *extensions.SandboxClaim
	e.eventually(timeout, func() string {
		c = e.claim(name)
		if r := condition(c.Status.Conditions, agents.ConditionReady); r.Status != metav1.ConditionTrue {
			return fmt.Sprintf("claim %s not Ready: %+v", name, r)
		}
		return ""
	})
	return c
}

// waitPool waits until the pool reports ready spares.
func (e *env) waitPool(ready int32) {
	e.t.Helper()
	e.eventually(30*time.Second, func() string {
		p, err := e.sb.SandboxWarmPools(e.ns).Get(e.t.Context(), poolName, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if p.Status.ReadyReplicas != ready || p.Status.Replicas != ready {
			return fmt.Sprintf("pool status %+v, want %d ready", p.Status, ready)
		}
		return ""
	})
}

// cookie performs sandgate's handshake with the pod: the launch token comes
// from the pod's log files on its node, nothing else.
func (e *env) cookie(pod *corev1.Pod, user string) string {
	e.t.Helper()
	h, err := handshake.New(handshake.Options{LogRoot: e.cluster.Kubelet.LogRoot(pod.Spec.NodeName)})
	if err != nil {
		e.t.Fatal(err)
	}
	defer h.Close()
	ck, err := h.Cookie(e.t.Context(), handshake.Target{
		User: user, Namespace: pod.Namespace, Pod: pod.Name, PodUID: string(pod.UID),
		Container: "dsh", Addr: pod.Status.PodIP + ":3080",
	})
	if err != nil {
		e.t.Fatalf("handshake: %v", err)
	}
	return ck
}

// do sends one request to the pod's app and returns status and body.
func do(t *testing.T, method string, pod *corev1.Pod, path, cookie, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, "http://"+pod.Status.PodIP+":3080"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Cookie", cookie)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

var launchToken = regexp.MustCompile(`\?token=([A-Za-z0-9_-]{43})`)

func tokenIn(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := launchToken.FindSubmatch(data)
	if m == nil {
		t.Fatalf("no launch token in %s", path)
	}
	return string(m[1])
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func volumeDir(e *env, pvc *corev1.PersistentVolumeClaim) string {
	return e.cluster.Kubelet.VolumeDir(e.ns, pvc.Name, types.UID(pvc.UID))
}
