package integration_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/sim/kubelet"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestTokenFileInTheSimulatedCluster: a template gives the app an emptyDir
// volume and DSH_TOKEN_FILE on it; a handshaker with the file source and
// no access to any log file gets working cookies from it, across a
// container restart, and nothing once the sandbox is suspended.
func TestTokenFileInTheSimulatedCluster(t *testing.T) {
	e := simtest.Start(t, testkit.ControlPlane(t), simtest.Options{})
	createFilePool(t, e, "dsh-file", "dsh-file-pool")
	e.CreateClaimOn("dsh-file-pool", "dsh-carol", agents.PodMetadata{})
	pod := e.ReadyPod("dsh-carol")

	reg := prometheus.NewRegistry()
	h, err := handshake.New(handshake.Options{
		TokenSource: handshake.SourceFile, PodsRoot: e.Cluster.Kubelet.PodsDir(pod.Spec.NodeName), Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	target := handshake.Target{
		User: "carol", Namespace: pod.Namespace, Pod: pod.Name, PodUID: string(pod.UID), Container: "dsh",
		Addr: pod.Status.PodIP + ":3080", Host: "gateway.example",
	}
	first, err := h.Cookie(t.Context(), target)
	if err != nil {
		t.Fatalf("handshake from the token file: %v", err)
	}
	if code := get(t, pod, first); code != http.StatusOK {
		t.Fatalf("app answered %d to the cookie from the token file", code)
	}

	restart(t, e, pod.Name)
	refreshed(t, h, pod, target, first)
	if n := counter(t, reg, "sandgate_handshake_total", "source", "file"); n != 2 {
		t.Errorf("file handshakes: %v, want 2", n)
	}

	// Suspend deletes the pod and its pod directory with it.
	e.SetMode(pod.Name, agents.OperatingModeSuspended)
	e.Eventually(testkit.Timeout, func() string {
		if _, err := os.Stat(filepath.Join(e.Cluster.Kubelet.PodsDir(pod.Spec.NodeName), string(pod.UID))); err == nil {
			return "pod directory still there"
		}
		return ""
	})
	if _, err := h.Refresh(t.Context(), target, ""); !errors.Is(err, handshake.ErrNoToken) {
		t.Errorf("handshake for the suspended pod: %v, want ErrNoToken", err)
	}
}

// TestPlantedRequestLogInTheSimulatedCluster: links whose paths look like
// token parameters make the app log them after its launch line; the
// handshake from the logs still exchanges only the launch token.
func TestPlantedRequestLogInTheSimulatedCluster(t *testing.T) {
	e := simtest.Start(t, testkit.ControlPlane(t), simtest.Options{Replicas: 1})
	e.WaitPool(1)
	e.CreateClaim("dsh-dave", agents.PodMetadata{})
	pod := e.ReadyPod("dsh-dave")
	planted := []string{"/x&token=" + strings.Repeat("A", 43), "/u/dave/a=1&token=" + strings.Repeat("b", 64)}
	for _, p := range planted {
		if code := request(t, pod, p); code != http.StatusUnauthorized {
			t.Fatalf("GET %s: %d, want 401", p, code)
		}
	}
	logFile := filepath.Join(e.Cluster.Kubelet.LogRoot(pod.Spec.NodeName), pod.Namespace+"_"+pod.Name+"_"+string(pod.UID), "dsh", "0.log")
	e.Eventually(testkit.Timeout, func() string {
		data, err := os.ReadFile(logFile)
		if err != nil {
			return err.Error()
		}
		if !strings.Contains(string(data), "dsh web: GET /u/dave/a=1&token=") {
			return "the planted request is not logged yet"
		}
		return ""
	})

	reg := prometheus.NewRegistry()
	h, err := handshake.New(handshake.Options{LogRoot: e.Cluster.Kubelet.LogRoot(pod.Spec.NodeName), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	cookie, err := h.Cookie(t.Context(), handshake.Target{
		User: "dave", Namespace: pod.Namespace, Pod: pod.Name, PodUID: string(pod.UID), Container: "dsh",
		Addr: pod.Status.PodIP + ":3080", Host: "gateway.example",
	})
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	if code := get(t, pod, cookie); code != http.StatusOK {
		t.Fatalf("app answered %d to the cookie", code)
	}
	if n := counter(t, reg, "sandgate_handshake_candidates_total", "outcome", "refused"); n != 0 {
		t.Errorf("%v candidates refused: a planted token was exchanged", n)
	}
	if n := counter(t, reg, "sandgate_handshake_candidates_total", "outcome", "accepted"); n != 1 {
		t.Errorf("%v candidates accepted, want 1", n)
	}
}

// createFilePool creates a template whose app writes its token to
// /run/dsh/token on an emptyDir volume, and a pool of one on it.
func createFilePool(t *testing.T, e *simtest.Env, template, pool string) {
	t.Helper()
	tmpl := &extensions.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: template},
		Spec: extensions.SandboxTemplateSpec{
			PodTemplate: agents.PodTemplate{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{
					Name: "dsh", Image: "example/dsh:1",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 3080, Protocol: corev1.ProtocolTCP}},
					Env: []corev1.EnvVar{
						{Name: kubelet.TrustedHostsEnv, Value: "gateway.example"},
						{Name: kubelet.TokenFileEnv, Value: "/run/dsh/token"},
					},
					VolumeMounts: []corev1.VolumeMount{{Name: "dsh-token", MountPath: "/run/dsh"}},
				}},
				Volumes: []corev1.Volume{{Name: "dsh-token", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			}},
			VolumeClaimTemplates: []agents.PersistentVolumeClaimTemplate{{
				Metadata: agents.VolumeClaimMetadata{Name: "dsh-home"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
	if _, err := e.SB.SandboxTemplates(e.NS).Create(t.Context(), tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wp := &extensions.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Name: pool},
		Spec:       extensions.SandboxWarmPoolSpec{Replicas: 1, SandboxTemplateRef: extensions.TemplateRef{Name: template}},
	}
	if _, err := e.SB.SandboxWarmPools(e.NS).Create(t.Context(), wp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// request sends GET path to the pod without a cookie.
func request(t *testing.T, pod *corev1.Pod, path string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+pod.Status.PodIP+":3080"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "gateway.example"
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
