package kubelet

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestLogRotationKeepsTokenReadable(t *testing.T) {
	const maxSize = 1024
	clock := testkit.NewSteppingClock(time.Now(), time.Second)
	e := startKubelet(t, 1, func(o *Options) {
		o.LogMaxSize, o.LogMaxFiles, o.Now = maxSize, 5, clock.Now
	})
	created := e.createPod("chatty", e.k.NodeNames()[0], "")
	pod := e.waitPod("chatty", "Ready", podReady)
	// Every request adds an access-log line to the container's stdout.
	for range 25 {
		get(t, pod, "/api/messages", "")
	}
	dir := filepath.Join(e.k.LogRoot(pod.Spec.NodeName), e.ns+"_chatty_"+string(created.UID), "dsh")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var gz, plain int
	tokenFile := ""
	for _, ent := range entries {
		name := ent.Name()
		data := readMaybeGzip(t, filepath.Join(dir, name))
		if testkit.HasLaunchLine(data) {
			tokenFile = name
		}
		if len(data) > maxSize {
			t.Errorf("%s holds %d bytes, over the %d rotation size", name, len(data), maxSize)
		}
		parseCRI(t, data)
		switch {
		case strings.HasSuffix(name, ".gz"):
			gz++
		case name != "0.log":
			plain++
		}
	}
	if gz == 0 || plain != 1 {
		t.Fatalf("files %v: want gzipped older rotations and one plain newest rotation", entries)
	}
	if !strings.HasSuffix(tokenFile, ".gz") {
		t.Fatalf("the launch line is in %q, want a compressed rotation", tokenFile)
	}
	// The launch line now sits in a compressed file; the handshake still
	// finds it from the files alone.
	if code := get(t, pod, "/api/messages", e.cookieFromLogs(pod, "alice")); code != http.StatusOK {
		t.Errorf("GET with the cookie from rotated logs: %d", code)
	}
}

func TestTrustedHostsFromConfigMap(t *testing.T) {
	e := startKubelet(t, 1, nil)
	_, err := e.client.CoreV1().ConfigMaps(e.ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "public"},
		Data:       map[string]string{"DSH_TRUSTED_HOSTS": "sandgate.example.com"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hosts"},
		Spec: corev1.PodSpec{NodeName: e.k.NodeNames()[0], Containers: []corev1.Container{{
			Name: "dsh", Image: "example/dsh:1",
			Env: []corev1.EnvVar{{Name: TrustedHostsEnv, ValueFrom: &corev1.EnvVarSource{
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "public"}, Key: "DSH_TRUSTED_HOSTS"},
			}}},
		}}},
	}
	if _, err := e.client.CoreV1().Pods(e.ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod = e.waitPod("hosts", "Ready", podReady)
	for host, want := range map[string]int{"sandgate.example.com": http.StatusUnauthorized, "evil.example": http.StatusBadRequest} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+pod.Status.PodIP+":3080/api/messages", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}
