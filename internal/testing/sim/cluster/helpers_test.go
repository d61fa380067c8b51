package cluster_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

const poolName = simtest.PoolName

func start(t *testing.T, replicas int32, delays controller.Delays) *simtest.Env {
	t.Helper()
	return simtest.Start(t, testkit.ControlPlane(t), simtest.Options{Replicas: replicas, Delays: delays})
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

func volumeDir(e *simtest.Env, pvc *corev1.PersistentVolumeClaim) string {
	return e.Cluster.Kubelet.VolumeDir(e.NS, pvc.Name, types.UID(pvc.UID))
}
