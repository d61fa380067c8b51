package kubelet

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// testEnv is a kubelet with its own nodes in a namespace of its own.
type testEnv struct {
	t      *testing.T
	ns     string
	client kubernetes.Interface
	k      *Kubelet
}

func startKubelet(t *testing.T, nodes int, tweak func(*Options)) *testEnv {
	t.Helper()
	n := testkit.NewNamespace(t)
	ns, client := n.Name, n.Kube
	dir := t.TempDir()
	opts := Options{
		Client: client, Nodes: nodes, NodePrefix: ns, Namespaces: []string{ns},
		LogDir: filepath.Join(dir, "logs"), DataDir: filepath.Join(dir, "data"),
	}
	if tweak != nil {
		tweak(&opts)
	}
	k, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	testkit.Run(t, "kubelet run", func(ctx context.Context) error {
		defer close(stopped)
		return k.Run(ctx)
	})
	select {
	case <-k.Ready():
	case <-stopped:
		t.Fatal("kubelet stopped before it was ready")
	case <-time.After(30 * time.Second):
		t.Fatal("kubelet not ready")
	}
	return &testEnv{t: t, ns: ns, client: client, k: k}
}

// createClaim creates a PersistentVolumeClaim, which stays Pending: no
// storage provisioner runs.
func (e *testEnv) createClaim(name string) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	pvc, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.t.Context(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return pvc
}

// createPod creates a pod bound to node, with claim (if any) as a volume.
func (e *testEnv) createPod(name, node, claim string) *corev1.Pod {
	e.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{
				Name: "dsh", Image: "example/dsh:1",
				Env: []corev1.EnvVar{{Name: TrustedHostsEnv, Value: "gateway.example, other.example"}},
			}},
		},
	}
	if claim != "" {
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
		}}}
	}
	pod, err := e.client.CoreV1().Pods(e.ns).Create(e.t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return pod
}

// waitPod polls the pod until cond holds and returns it.
func (e *testEnv) waitPod(name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	e.t.Helper()
	var last *corev1.Pod
	ok := testkit.Poll(e.t.Context(), testkit.Timeout, func() bool {
		pod, err := e.client.CoreV1().Pods(e.ns).Get(e.t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		last = pod
		return cond(pod)
	})
	if !ok {
		e.t.Fatalf("pod %s: %s never happened; last status %+v", name, what, last)
	}
	return last
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func restarts(pod *corev1.Pod) int32 {
	if len(pod.Status.ContainerStatuses) == 0 {
		return -1
	}
	return pod.Status.ContainerStatuses[0].RestartCount
}

// cookieFromLogs runs sandgate's handshake against the pod: it reads the
// launch token from the node's log files alone and trades it for the app's
// auth cookie.
func (e *testEnv) cookieFromLogs(pod *corev1.Pod, user string) string {
	e.t.Helper()
	h, err := handshake.New(handshake.Options{LogRoot: e.k.LogRoot(pod.Spec.NodeName)})
	if err != nil {
		e.t.Fatal(err)
	}
	defer h.Close()
	cookie, err := h.Cookie(e.t.Context(), handshake.Target{
		User: user, Namespace: pod.Namespace, Pod: pod.Name, PodUID: string(pod.UID),
		Container: pod.Spec.Containers[0].Name, Addr: pod.Status.PodIP + ":3080",
	})
	if err != nil {
		e.t.Fatalf("handshake from the log files: %v", err)
	}
	return cookie
}

// get sends GET path to the pod with cookie and returns the status code.
func get(t *testing.T, pod *corev1.Pod, path, cookie string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+pod.Status.PodIP+":3080"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
