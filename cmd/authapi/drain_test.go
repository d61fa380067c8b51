package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestDrainCommand: "authapi drain", the preStop hook, makes the running
// auth API's /readyz fail at once while its public listener still serves,
// and waits for DRAIN_DELAY before it returns.
func TestDrainCommand(t *testing.T) {
	s := startServer(t, map[string]string{"DRAIN_DELAY": "1h"})
	drainCtx, stopDrain := context.WithCancel(context.Background())
	drained := make(chan int, 1)
	var drainErr bytes.Buffer
	go func() {
		drained <- run(drainCtx, []string{"drain"}, testkit.Env(s.env), strings.NewReader(""), &bytes.Buffer{}, &drainErr)
	}()
	s.await(t, "failing /readyz during the drain", func() bool { return testkit.Status("http://"+s.ops+"/readyz") == http.StatusServiceUnavailable })
	if got := testkit.Status("http://" + s.pub + "/"); got != 200 {
		t.Errorf("public / while draining: %d", got)
	}
	select {
	case code := <-drained:
		t.Fatalf("drain returned %d before DRAIN_DELAY: %s", code, drainErr.String())
	default:
	}
	stopDrain()
	if code := testkit.Receive(t, "the drain command's exit", drained); code != 1 {
		t.Errorf("drain given up: exit %d, want 1", code)
	}
	if code := s.stop(); code != 0 {
		t.Errorf("exit %d; logs:\n%s", code, s.logs)
	}
	if !strings.Contains(s.logs.String(), `"msg":"drain begun: /readyz fails from now on"`) {
		t.Errorf("no drain log:\n%s", s.logs)
	}
}
