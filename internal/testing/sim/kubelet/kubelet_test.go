package kubelet

import (
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestNodesRegistered(t *testing.T) {
	e := startKubelet(t, 2, func(o *Options) { o.NodeLabels = map[string]string{"sim.example/cluster": "a"} })
	for i, name := range e.k.NodeNames() {
		node, err := e.client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if node.Labels["sim.example/cluster"] != "a" || node.Labels["kubernetes.io/hostname"] != name {
			t.Errorf("node %s labels %v", name, node.Labels)
		}
		var ip string
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ip = a.Address
			}
		}
		if want := "127.0.1." + string(rune('1'+i)); ip != want || e.k.NodeIP(name) != want {
			t.Errorf("node %s InternalIP %q (NodeIP %q), want %s", name, ip, e.k.NodeIP(name), want)
		}
		ready := false
		for _, c := range node.Status.Conditions {
			ready = ready || c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
		}
		if !ready {
			t.Errorf("node %s not Ready: %+v", name, node.Status.Conditions)
		}
	}
}

func TestPodLifecycle(t *testing.T) {
	e := startKubelet(t, 2, nil)
	node := e.k.NodeNames()[1]
	pvc := e.createClaim("data-sb")
	created := e.createPod("sb", node, pvc.Name)

	pod := e.waitPod("sb", "Ready", podReady)
	if pod.Status.Phase != corev1.PodRunning || pod.Status.HostIP != "127.0.1.2" || restarts(pod) != 0 {
		t.Errorf("status phase %s hostIP %s restarts %d", pod.Status.Phase, pod.Status.HostIP, restarts(pod))
	}
	if ip := net.ParseIP(pod.Status.PodIP); ip == nil || !strings.HasPrefix(pod.Status.PodIP, "127.102.") ||
		len(pod.Status.PodIPs) != 1 || pod.Status.PodIPs[0].IP != pod.Status.PodIP {
		t.Errorf("pod IPs %q %v, want one address in node 2's range", pod.Status.PodIP, pod.Status.PodIPs)
	}

	// The token in the node's files is the one the app accepts.
	logDir := filepath.Join(e.k.LogRoot(node), e.ns+"_sb_"+string(created.UID), "dsh")
	cookie := e.cookieFromLogs(pod, "alice")
	if code := get(t, pod, "/api/messages", cookie); code != http.StatusOK {
		t.Fatalf("GET with the handshake cookie: %d", code)
	}
	if code := get(t, pod, "/api/messages", ""); code != http.StatusUnauthorized {
		t.Errorf("GET without cookie: %d, want 401", code)
	}
	firstToken := testkit.LaunchToken(t, filepath.Join(logDir, "0.log"))

	// A crash restarts the container: new log file, new token, old cookie refused.
	if err := e.k.KillContainer(e.ns, "sb"); err != nil {
		t.Fatal(err)
	}
	pod = e.waitPod("sb", "restarted and Ready", func(p *corev1.Pod) bool { return restarts(p) == 1 && podReady(p) })
	if pod.UID != created.UID || pod.Status.ContainerStatuses[0].LastTerminationState.Terminated == nil {
		t.Errorf("after the crash: uid %s, lastState %+v", pod.UID, pod.Status.ContainerStatuses[0].LastTerminationState)
	}
	if second := testkit.LaunchToken(t, filepath.Join(logDir, "1.log")); second == firstToken {
		t.Error("the restarted container printed the old token")
	}
	if code := get(t, pod, "/api/messages", cookie); code != http.StatusUnauthorized {
		t.Errorf("old cookie after restart: %d, want 401", code)
	}
	if code := get(t, pod, "/api/messages", e.cookieFromLogs(pod, "bob")); code != http.StatusOK {
		t.Errorf("cookie from the new log file: %d", code)
	}

	// Graceful deletion: the kubelet stops the app and removes the pod.
	volume := e.k.VolumeDir(e.ns, pvc.Name, pvc.UID)
	if err := e.client.CoreV1().Pods(e.ns).Delete(t.Context(), "sb", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "pod removed after a graceful delete", func() bool {
		_, err := e.client.CoreV1().Pods(e.ns).Get(t.Context(), "sb", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	testkit.Eventually(t, "pod log directory removed", func() bool { return !testkit.Exists(logDir) })
	if !testkit.Exists(filepath.Join(volume, "workspace")) {
		t.Error("volume directory removed with the pod")
	}

	// Deleting the claim removes the volume. No controller removes the
	// pvc-protection finalizer here, so the test does.
	if err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Delete(t.Context(), pvc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Patch(t.Context(), pvc.Name, types.MergePatchType,
		[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	testkit.Eventually(t, "volume directory removed after the claim was deleted", func() bool { return !testkit.Exists(volume) })
}

func TestPodWithoutClaimGetsEphemeralVolume(t *testing.T) {
	e := startKubelet(t, 1, nil)
	created := e.createPod("scratch", e.k.NodeNames()[0], "")
	e.waitPod("scratch", "Ready", podReady)
	dir := filepath.Join(e.k.opts.DataDir, "pods", string(created.UID))
	if !testkit.Exists(dir) {
		t.Fatalf("no ephemeral volume at %s", dir)
	}
	if err := e.client.CoreV1().Pods(e.ns).Delete(t.Context(), "scratch", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "ephemeral volume removed after the pod was deleted", func() bool { return !testkit.Exists(dir) })
}

func TestStatusPatchNamesUID(t *testing.T) {
	e := startKubelet(t, 1, nil)
	// Bound to a node nobody runs, so only the test writes its status.
	pod := e.createPod("other", "nowhere", "")
	w := &worker{k: e.k, namespace: e.ns, name: pod.Name, uid: types.UID("00000000-0000-0000-0000-000000000000")}
	st := newPodState(pod, "127.9.9.9", "127.0.1.9")
	if err := w.patchStatus(t.Context(), st.status()); err == nil {
		t.Fatal("a status patch for another UID succeeded")
	}
	got, err := e.client.CoreV1().Pods(e.ns).Get(t.Context(), pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.PodIP != "" {
		t.Errorf("status changed to %+v", got.Status)
	}
}

func TestKillUnknownContainer(t *testing.T) {
	e := startKubelet(t, 1, nil)
	if err := e.k.KillContainer(e.ns, "missing"); !errors.Is(err, ErrNoContainer) {
		t.Errorf("KillContainer: %v, want ErrNoContainer", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	err := Options{Nodes: -1, LogDir: "rel", LogMaxFiles: 1}.Validate()
	if err == nil {
		t.Fatal("invalid options passed")
	}
	for _, want := range []string{"client", "nodes", "log dir", "data dir", "max files"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

// TestEvictedPodStaysFailed: an evicted pod reports phase Failed (reason
// Evicted) and its app stops; nothing restarts it, and deleting it still
// removes it.
func TestEvictedPodStaysFailed(t *testing.T) {
	e := startKubelet(t, 1, nil)
	e.createPod("ev", e.k.NodeNames()[0], "")
	pod := e.waitPod("ev", "Ready", podReady)
	if err := e.k.EvictPod(e.ns, "ev"); err != nil {
		t.Fatal(err)
	}
	failed := e.waitPod("ev", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
	if failed.UID != pod.UID || failed.Status.Reason != "Evicted" || podReady(failed) {
		t.Errorf("evicted pod: uid %s, reason %q, ready %v; want the same pod, Evicted, not ready", failed.UID, failed.Status.Reason, podReady(failed))
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort(failed.Status.PodIP, "3080"), time.Second); err == nil {
		c.Close()
		t.Error("the evicted pod's app still accepts connections")
	}
	if err := e.client.CoreV1().Pods(e.ns).Delete(t.Context(), "ev", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "evicted pod removed after its deletion", func() bool {
		_, err := e.client.CoreV1().Pods(e.ns).Get(t.Context(), "ev", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	if err := e.k.EvictPod(e.ns, "missing"); !errors.Is(err, ErrNoContainer) {
		t.Errorf("EvictPod of an unknown pod: %v, want ErrNoContainer", err)
	}
}
