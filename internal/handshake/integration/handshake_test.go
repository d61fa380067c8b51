// Package integration_test runs internal/handshake against the simulated
// cluster on a real API server: the token comes from the node's log files only.
package integration_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// restart kills the app container of pod name and waits until it runs
// again, Ready.
func restart(t *testing.T, e *simtest.Env, name string) {
	t.Helper()
	if err := e.Cluster.Kubelet.KillContainer(e.NS, name); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyNil(t, "container of "+name+" restarted and Ready", func() error {
		p, err := e.Pod(name)
		if err != nil {
			return err
		}
		if s := p.Status.ContainerStatuses; len(s) == 0 || s[0].RestartCount != 1 || !s[0].Ready {
			return fmt.Errorf("container statuses %+v", s)
		}
		return nil
	})
}

// counter sums a counter family's samples whose label matches.
func counter(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	n, _ := testkit.Gathered(t, reg, name, map[string]string{label: value})
	return n
}

// refreshed refreshes the stale cookie of pod's app after a restart and
// checks that the new cookie opens the app.
func refreshed(t *testing.T, h *handshake.Handshaker, pod *corev1.Pod, tgt handshake.Target, stale string) {
	t.Helper()
	fresh, err := h.Refresh(t.Context(), tgt, stale)
	if err != nil {
		t.Fatalf("refresh after restart: %v", err)
	}
	if fresh == stale || get(t, pod, fresh) != http.StatusOK {
		t.Fatal("refresh did not obtain a working new cookie")
	}
}

func get(t *testing.T, pod *corev1.Pod, cookie string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+pod.Status.PodIP+":3080/api/messages", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "gateway.example"
	req.Header.Set("Cookie", cookie)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestHandshakeWithTheSimulatedCluster(t *testing.T) {
	e := simtest.Start(t, testkit.ControlPlane(t), simtest.Options{Replicas: 1})
	e.WaitPool(1)
	e.CreateClaim("dsh-bob", agents.PodMetadata{})
	pod := e.ReadyPod("dsh-bob")

	reg := prometheus.NewRegistry()
	h, err := handshake.New(handshake.Options{LogRoot: e.Cluster.Kubelet.LogRoot(pod.Spec.NodeName), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	target := func(p *corev1.Pod) handshake.Target {
		return handshake.Target{
			User: "bob", Namespace: p.Namespace, Pod: p.Name, PodUID: string(p.UID), Container: "dsh",
			Addr: p.Status.PodIP + ":3080", Host: "gateway.example",
			ForwardedFor: "192.0.2.1", ForwardedProto: "https", ForwardedHost: "gateway.example",
		}
	}

	// Pod deletions reach the handshaker as they do in the node proxy.
	factory := informers.NewSharedInformerFactoryWithOptions(e.Core, 0, informers.WithNamespace(e.NS))
	podInformer := factory.Core().V1().Pods().Informer()
	if _, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if p, ok := obj.(*corev1.Pod); ok {
			h.ForgetPod(string(p.UID))
		}
	}}); err != nil {
		t.Fatal(err)
	}
	factory.Start(t.Context().Done())
	t.Cleanup(factory.Shutdown)
	factory.WaitForCacheSync(t.Context().Done())

	first, err := h.Cookie(t.Context(), target(pod))
	if err != nil {
		t.Fatalf("first handshake: %v", err)
	}
	if code := get(t, pod, first); code != http.StatusOK {
		t.Fatalf("app answered %d to the handshake cookie", code)
	}
	again, err := h.Cookie(t.Context(), target(pod))
	if err != nil || again != first {
		t.Fatalf("second request: cookie changed or failed: %v", err)
	}
	if n := counter(t, reg, "sandgate_handshake_total", "result", "ok"); n != 1 {
		t.Errorf("handshakes after two requests: %v, want 1 (the second is a cache hit)", n)
	}

	// The app restarts with a new token: the old cookie gets 401, and one
	// refresh reads the new token from the new log file.
	restart(t, e, pod.Name)
	if code := get(t, pod, first); code != http.StatusUnauthorized {
		t.Fatalf("restarted app answered %d to the old cookie, want 401", code)
	}
	refreshed(t, h, pod, target(pod), first)
	if n := counter(t, reg, "sandgate_handshake_total", "result", "ok"); n != 2 {
		t.Errorf("handshakes after the refresh: %v, want 2", n)
	}

	// Suspend deletes the pod; its entry is dropped, so the next lookup misses.
	e.SetMode(pod.Name, agents.OperatingModeSuspended)
	e.Eventually(testkit.Timeout, func() string {
		if _, err := e.Core.CoreV1().Pods(e.NS).Get(t.Context(), pod.Name, metav1.GetOptions{}); err == nil {
			return "pod still there"
		}
		return ""
	})
	misses := counter(t, reg, "sandgate_handshake_cache_lookups_total", "result", "miss")
	e.Eventually(testkit.Timeout, func() string {
		_, err := h.Cookie(t.Context(), target(pod))
		if err == nil {
			return "a cookie for the suspended pod is still served"
		}
		if !errors.Is(err, handshake.ErrNoLogs) && !errors.Is(err, handshake.ErrExchange) {
			return "unexpected error: " + err.Error()
		}
		return ""
	})
	if after := counter(t, reg, "sandgate_handshake_cache_lookups_total", "result", "miss"); after <= misses {
		t.Errorf("lookup after suspend did not miss the cache (misses %v -> %v)", misses, after)
	}
}
