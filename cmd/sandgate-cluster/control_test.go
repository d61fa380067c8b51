package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
)

// TestControlSocket ends and starts a stand-in (a shell that sleeps)
// through the control socket, as the cluster journey does.
func TestControlSocket(t *testing.T) {
	dir := t.TempDir()
	var started [][]string
	s := &standin{args: []string{"--kubeconfig=k"}, run: func(args ...string) (*controlplane.Process, error) {
		started = append(started, args)
		return controlplane.StartProcess("standin", dir, "/bin/sh", nil, append([]string{"-c", "sleep 60"}, args...)...)
	}}
	if err := s.start(""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.stop() })
	sock := filepath.Join(dir, "control.sock")
	stop, err := serveControl(context.Background(), sock, s)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	call := func(method, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://cluster"+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(body))
	}
	for _, step := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/sandbox-controller", 200, `{"release":"","running":true}`},
		{"POST", "/sandbox-controller/start", 409, "already running"},
		{"POST", "/sandbox-controller/stop", 204, ""},
		{"GET", "/sandbox-controller", 200, `{"release":"","running":false}`},
		{"POST", "/sandbox-controller/stop", 204, ""},
		{"POST", "/sandbox-controller/start?release=v0.5.6", 204, ""},
		{"GET", "/sandbox-controller", 200, `{"release":"v0.5.6","running":true}`},
	} {
		if code, body := call(step.method, step.path); code != step.code || !strings.Contains(body, step.body) {
			t.Fatalf("%s %s: %d %q, want %d %q", step.method, step.path, code, body, step.code, step.body)
		}
	}
	if len(started) != 2 || strings.Join(started[1], " ") != "--kubeconfig=k --release=v0.5.6" {
		t.Errorf("started with %q", started)
	}
}
