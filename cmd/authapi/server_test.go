package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
	"github.com/sandgate/sandgate/internal/testing/logbuf"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// server is one run of the command, in-process, against the test binary's
// API server.
type server struct {
	pub, ops string
	env      map[string]string
	logs     *logbuf.Buffer
	stop     func() int
}

// startServer runs the command in a namespace of the test's own, on free
// ports, with insecure cookies and extra on top, and waits until its
// /readyz passes. The run stops when the test ends, if stop has not
// stopped it before.
func startServer(t *testing.T, extra map[string]string) *server {
	t.Helper()
	ns := testkit.NewNamespace(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := controlplane.WriteKubeconfig(ns.Config, kubeconfig); err != nil {
		t.Fatal(err)
	}
	s := &server{pub: testkit.FreeAddr(t), ops: testkit.FreeAddr(t), logs: &logbuf.Buffer{}}
	s.env = map[string]string{
		"KUBECONFIG": kubeconfig, "NAMESPACE": ns.Name, "LISTEN_ADDR": s.pub, "OPS_ADDR": s.ops,
		"COOKIE_SECURE": "false", "ALLOW_INSECURE_COOKIES": "1", "POD_NAME": "authapi-test",
	}
	maps.Copy(s.env, extra)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- run(ctx, nil, testkit.Env(s.env), strings.NewReader(""), &bytes.Buffer{}, s.logs) }()
	s.stop = sync.OnceValue(func() int {
		cancel()
		return testkit.Receive(t, "the auth API's exit", done)
	})
	t.Cleanup(func() {
		s.stop()
		http.DefaultClient.CloseIdleConnections()
	})
	s.await(t, "ready", func() bool { return testkit.Status("http://"+s.ops+"/readyz") == http.StatusOK })
	return s
}

// await waits until cond holds and fails the test with the server's logs
// if it does not within testkit.Timeout.
func (s *server) await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !testkit.Poll(t.Context(), testkit.Timeout, cond) {
		t.Fatalf("not %s; logs:\n%s", what, s.logs)
	}
}

// TestSignupInFlightAtShutdownIsAnswered: an API client's signup is
// waiting for its sandbox (no controller runs here, so it never gets
// Ready) when the command is told to stop. It still gets its token, 202
// with the sandbox waking, and the command exits 0: the claim informer
// outlives the listeners and the wait ends with the shutdown.
func TestSignupInFlightAtShutdownIsAnswered(t *testing.T) {
	s := startServer(t, map[string]string{"WAKE_TIMEOUT": "10m"})
	type answer struct {
		code int
		body []byte
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := http.Post("http://"+s.pub+"/users", "application/json", strings.NewReader(`{"user":"carol"}`))
		if err != nil {
			got <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		got <- answer{resp.StatusCode, body, err}
	}()
	s.await(t, "signup waiting for its sandbox", func() bool { return strings.Contains(s.logs.String(), `"msg":"account created"`) })
	if code := s.stop(); code != 0 {
		t.Errorf("exit %d; logs:\n%s", code, s.logs)
	}
	a := testkit.Receive(t, "the signup's answer", got)
	var res struct{ Token, State string }
	if a.err != nil || a.code != http.StatusAccepted || json.Unmarshal(a.body, &res) != nil || res.Token == "" || res.State != "Waking" {
		t.Fatalf("signup answered %d %s (%v), want 202 with a token, Waking", a.code, a.body, a.err)
	}
}
