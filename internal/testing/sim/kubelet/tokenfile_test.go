package kubelet

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestOnHost(t *testing.T) {
	volumes := []corev1.Volume{
		{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "home", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
	}
	mounts := []corev1.VolumeMount{
		{Name: "home", MountPath: "/home/node"},
		{Name: "run", MountPath: "/run/dsh"},
		{Name: "run", MountPath: "/home/node/run/", SubPath: "sub"},
	}
	pod := "/pods/uid"
	tests := []struct {
		path string
		want string // "" means an error
	}{
		{"/run/dsh/token", "/pods/uid/volumes/kubernetes.io~empty-dir/run/token"},
		{"/run/dsh/a/token", "/pods/uid/volumes/kubernetes.io~empty-dir/run/a/token"},
		{"/home/node/run/token", "/pods/uid/volumes/kubernetes.io~empty-dir/run/sub/token"}, // the deeper mount wins
		{"/home/node/token", ""}, // on a claim, not an emptyDir
		{"/tmp/token", ""},       // in the container's own filesystem
		{"/run/dsh", ""},         // the mount itself
		{"/run/dshx/token", ""},  // not below the mount
		{"/run/dsh/../token", ""},
		{"run/dsh/token", ""},
		{"/", ""},
	}
	for _, tc := range tests {
		got, err := onHost(pod, volumes, mounts, tc.path)
		if (err == nil) != (tc.want != "") || got != tc.want {
			t.Errorf("onHost(%q) = %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
	if _, err := onHost(pod, volumes, mounts, "/home/node/token"); !errors.Is(err, errNotOnEmptyDir) {
		t.Errorf("a claim's path: %v, want errNotOnEmptyDir", err)
	}
	escaping := []corev1.VolumeMount{{Name: "run", MountPath: "/run/dsh", SubPath: "../x"}}
	if _, err := onHost(pod, volumes, escaping, "/run/dsh/token"); err == nil {
		t.Error("a subPath leaving the volume was followed")
	}
}

// TestTokenFileOnEmptyDir runs a pod whose app writes its token to an
// emptyDir volume and does the handshake from that file alone, as a node
// proxy with TOKEN_SOURCE=file does, across a container restart.
func TestTokenFileOnEmptyDir(t *testing.T) {
	e := startKubelet(t, 1, nil)
	node := e.k.NodeNames()[0]
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "tokfile"},
		Spec: corev1.PodSpec{
			NodeName: node,
			Containers: []corev1.Container{{
				Name: "dsh", Image: "example/dsh:1",
				Env:          []corev1.EnvVar{{Name: TokenFileEnv, Value: "/run/dsh/token"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "dsh-token", MountPath: "/run/dsh"}},
			}},
			Volumes: []corev1.Volume{{Name: "dsh-token", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
		},
	}
	created, err := e.client.CoreV1().Pods(e.ns).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ready := e.waitPod("tokfile", "Ready", podReady)

	file := filepath.Join(e.k.PodsDir(node), string(created.UID), "volumes", "kubernetes.io~empty-dir", "dsh-token", "token")
	logDir := filepath.Join(e.k.LogRoot(node), e.ns+"_tokfile_"+string(created.UID), "dsh")
	if got, want := fileToken(t, file), testkit.LaunchToken(t, filepath.Join(logDir, "0.log")); got != want {
		t.Fatalf("token file holds %q, the launch line %q", got, want)
	}
	h, err := handshake.New(handshake.Options{TokenSource: handshake.SourceFile, PodsRoot: e.k.PodsDir(node)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	target := handshake.Target{
		User: "alice", Namespace: e.ns, Pod: "tokfile", PodUID: string(created.UID), Container: "dsh",
		Addr: ready.Status.PodIP + ":3080",
	}
	cookie, err := h.Cookie(t.Context(), target)
	if err != nil {
		t.Fatalf("handshake from the token file: %v", err)
	}
	if code := get(t, ready, "/api/messages", cookie); code != http.StatusOK {
		t.Fatalf("GET with the cookie from the token file: %d", code)
	}

	// A restarted container writes its new token over the old one.
	if err := e.k.KillContainer(e.ns, "tokfile"); err != nil {
		t.Fatal(err)
	}
	e.waitPod("tokfile", "restarted and Ready", func(p *corev1.Pod) bool { return restarts(p) == 1 && podReady(p) })
	if got, want := fileToken(t, file), testkit.LaunchToken(t, filepath.Join(logDir, "1.log")); got != want {
		t.Fatalf("after the restart the token file holds %q, the launch line %q", got, want)
	}
	fresh, err := h.Refresh(t.Context(), target, cookie)
	if err != nil {
		t.Fatalf("refresh from the token file: %v", err)
	}
	if code := get(t, ready, "/api/messages", fresh); fresh == cookie || code != http.StatusOK {
		t.Fatalf("refreshed cookie: changed %v, GET %d", fresh != cookie, code)
	}

	// The pod directory, with its emptyDir volume, goes with the pod.
	if err := e.client.CoreV1().Pods(e.ns).Delete(t.Context(), "tokfile", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "pod and its directory removed", func() bool {
		_, err := e.client.CoreV1().Pods(e.ns).Get(t.Context(), "tokfile", metav1.GetOptions{})
		return apierrors.IsNotFound(err) && !testkit.Exists(filepath.Join(e.k.PodsDir(node), string(created.UID)))
	})
}

// TestTokenFileOffEmptyDir: a token file outside an emptyDir volume is not
// written where the node could read it, and the app still starts.
func TestTokenFileOffEmptyDir(t *testing.T) {
	e := startKubelet(t, 1, nil)
	node := e.k.NodeNames()[0]
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nofile"},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{
			Name: "dsh", Image: "example/dsh:1",
			Env: []corev1.EnvVar{{Name: TokenFileEnv, Value: "/tmp/token"}},
		}}},
	}
	created, err := e.client.CoreV1().Pods(e.ns).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.waitPod("nofile", "Ready", podReady)
	if entries, _ := os.ReadDir(filepath.Join(e.k.PodsDir(node), string(created.UID))); len(entries) != 0 {
		t.Errorf("pod directory holds %v", entries)
	}
}

// TestSplitLaunchLineAcrossRotations: an app printing a 32-hex token, its
// launch line cut into P records spread over rotated (and compressed)
// files, still hands its token to the handshake from the logs.
func TestSplitLaunchLineAcrossRotations(t *testing.T) {
	const hex32 = "9f86d081884c7d659a2feaa0c55ad015"
	clock := testkit.NewSteppingClock(time.Now(), time.Second)
	e := startKubelet(t, 1, func(o *Options) {
		o.LogMaxLine, o.LogMaxSize, o.LogMaxFiles, o.Now = 20, 150, 100, clock.Now
		o.App.NewToken = func() string { return hex32 }
	})
	created := e.createPod("split", e.k.NodeNames()[0], "")
	pod := e.waitPod("split", "Ready", podReady)

	// The launch line's first and last records sit in different files.
	line := "dsh web: listening on http://" + pod.Status.PodIP + ":3080/?token=" + hex32
	first, last := "stdout P "+line[:20]+"\n", "stdout F "+line[(len(line)-1)/20*20:]+"\n"
	dir := filepath.Join(e.k.LogRoot(pod.Spec.NodeName), e.ns+"_split_"+string(created.UID), "dsh")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	firstIn, lastIn := "", ""
	for _, ent := range entries {
		data := string(readMaybeGzip(t, filepath.Join(dir, ent.Name())))
		if strings.Contains(data, first) {
			firstIn = ent.Name()
		}
		if strings.Contains(data, last) {
			lastIn = ent.Name()
		}
	}
	if firstIn == "" || lastIn == "" || firstIn == lastIn {
		t.Fatalf("launch line starts in %q and ends in %q, want two files", firstIn, lastIn)
	}
	if code := get(t, pod, "/api/messages", e.cookieFromLogs(pod, "alice")); code != http.StatusOK {
		t.Errorf("GET with the cookie from the split launch line: %d", code)
	}
}

// fileToken reads a token file.
func fileToken(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}
