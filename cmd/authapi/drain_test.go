package main

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/clustertest"
	"github.com/sandgate/sandgate/internal/controlplane"
	"github.com/sandgate/sandgate/internal/logbuf"
)

// TestDrainCommand: "authapi drain", the preStop hook, makes the running
// auth API's /readyz fail at once while its public listener still serves,
// and waits for DRAIN_DELAY before it returns.
func TestDrainCommand(t *testing.T) {
	ns := clustertest.Namespace(t, cluster)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := controlplane.WriteKubeconfig(cluster.AdminConfig(), kubeconfig); err != nil {
		t.Fatal(err)
	}
	pub, ops := freePort(t), freePort(t)
	e := map[string]string{
		"KUBECONFIG": kubeconfig, "NAMESPACE": ns, "LISTEN_ADDR": pub, "OPS_ADDR": ops,
		"COOKIE_SECURE": "false", "ALLOW_INSECURE_COOKIES": "1", "POD_NAME": "authapi-test", "DRAIN_DELAY": "1h",
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	logs := &logbuf.Buffer{}
	go func() { done <- run(ctx, nil, env(e), strings.NewReader(""), &bytes.Buffer{}, logs) }()
	get := func(url string) int {
		resp, err := http.Get(url)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s; logs:\n%s", what, logs.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("never ready", func() bool { return get("http://"+ops+"/readyz") == 200 })

	drainCtx, stopDrain := context.WithCancel(context.Background())
	drained := make(chan int, 1)
	var drainErr bytes.Buffer
	go func() {
		drained <- run(drainCtx, []string{"drain"}, env(e), strings.NewReader(""), &bytes.Buffer{}, &drainErr)
	}()
	waitFor("/readyz still passes during the drain", func() bool { return get("http://"+ops+"/readyz") == 503 })
	if got := get("http://" + pub + "/"); got != 200 {
		t.Errorf("public / while draining: %d", got)
	}
	select {
	case code := <-drained:
		t.Fatalf("drain returned %d before DRAIN_DELAY: %s", code, drainErr.String())
	default:
	}
	stopDrain()
	if code := <-drained; code != 1 {
		t.Errorf("drain given up: exit %d, want 1", code)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d; logs:\n%s", code, logs.String())
	}
	if !strings.Contains(logs.String(), `"msg":"drain begun: /readyz fails from now on"`) {
		t.Errorf("no drain log:\n%s", logs.String())
	}
	http.DefaultClient.CloseIdleConnections()
}
