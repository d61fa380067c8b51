package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/drain"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestDrainCommand: "nodeproxy drain" (the preStop hook) drains the proxy
// at OPS_ADDR, and fails, in JSON on stderr, when nothing answers there.
func TestDrainCommand(t *testing.T) {
	gate := drain.New(0, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	ops := httptest.NewServer(gate.Wrap(http.NotFoundHandler()))
	defer ops.Close()
	e := map[string]string{"NODE_NAME": "n1", "OPS_ADDR": ops.Listener.Addr().String()}
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"drain"}, testkit.Env(e), &bytes.Buffer{}, &stderr); code != 0 || !gate.Draining() {
		t.Fatalf("drain: exit %d, draining %v: %s", code, gate.Draining(), stderr.String())
	}
	ops.Close()
	stderr.Reset()
	if code := run(context.Background(), []string{"drain"}, testkit.Env(e), &bytes.Buffer{}, &stderr); code != 1 || !strings.HasPrefix(stderr.String(), `{"time"`) {
		t.Errorf("drain with nothing at OPS_ADDR: exit %d: %s", code, stderr.String())
	}
}
