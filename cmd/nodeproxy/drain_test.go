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

// TestDrainReadsOnlyItsSettings: the preStop hook drains even when a
// setting it does not use has gone bad under the running proxy (a TLS
// file a Secret update removed, an unparsable value), and still refuses
// its own bad ones.
func TestDrainReadsOnlyItsSettings(t *testing.T) {
	gate := drain.New(0, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	ops := httptest.NewServer(gate.Wrap(http.NotFoundHandler()))
	defer ops.Close()
	e := map[string]string{"OPS_ADDR": ops.Listener.Addr().String(),
		"TLS_CERT_FILE": "/nonexistent/tls.crt", "TLS_KEY_FILE": "/nonexistent/tls.key", "MAX_BODY_MB": "lots", "HOP_KEY_FILE": "/nonexistent/key"}
	var stderr bytes.Buffer
	if code := run(context.Background(), []string{"drain"}, testkit.Env(e), &bytes.Buffer{}, &stderr); code != 0 || !gate.Draining() {
		t.Fatalf("drain: exit %d, draining %v: %s", code, gate.Draining(), stderr.String())
	}
	e["DRAIN_DELAY"] = "-1"
	stderr.Reset()
	if code := run(context.Background(), []string{"drain"}, testkit.Env(e), &bytes.Buffer{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "DRAIN_DELAY -1s must not be negative") {
		t.Errorf("drain with DRAIN_DELAY=-1: exit %d: %s", code, stderr.String())
	}
}
