package nodeproxy

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	predrain "github.com/sandgate/sandgate/internal/drain"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestDrainFailsReadinessWhileServing (issue 24 item 5): once the preStop
// drain begins, /readyz fails at once while users' requests still go
// through; a peer outside the pod cannot start a drain.
func TestDrainFailsReadinessWhileServing(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.addUser("alice", "node-a")
	gate := predrain.New(time.Hour, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	ops := gate.Wrap(h.nodes["node-a"].proxy.OpsHandler())
	srv := httptest.NewServer(ops)
	defer srv.Close()
	readyz := func() int {
		resp, err := http.Get(srv.URL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		return resp.StatusCode
	}
	if code := readyz(); code != http.StatusOK {
		t.Fatalf("/readyz before the drain: %d", code)
	}

	r := httptest.NewRequest(http.MethodPost, "/drain", nil)
	r.RemoteAddr = "10.244.1.8:40000"
	w := httptest.NewRecorder()
	ops.ServeHTTP(w, r)
	if w.Code != http.StatusForbidden || gate.Draining() || readyz() != http.StatusOK {
		t.Fatalf("drain from another pod: %d, draining %v", w.Code, gate.Draining())
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = predrain.Request(ctx, srv.Listener.Addr().String(), time.Hour) }()
	testkit.Eventually(t, "/readyz fails once the drain begins", func() bool { return readyz() == http.StatusServiceUnavailable })
	if !gate.Draining() {
		t.Error("/readyz fails but no drain has begun")
	}
	resp := h.get("node-a", "/u/alice/api/echo", map[string]string{"Cookie": cookie(h.session("alice"))})
	if body := readAll(t, resp); resp.StatusCode != http.StatusOK {
		t.Errorf("proxied request while draining: %d %s", resp.StatusCode, body)
	}
}
