package nodeproxyd

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/requestpath/nodeproxy"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// unreachableClients are API clients for a server that refuses every
// connection: the informers never sync.
func unreachableClients(t *testing.T) Clients {
	t.Helper()
	kube, sb := testkit.Clients(t, &rest.Config{Host: "http://127.0.0.1:1"})
	return Clients{Kube: kube, Sandboxes: sb}
}

// TestAssembleAndRun: the assembly binds ":0" listeners whose addresses
// read back, serves the ops listener at once with /readyz failing while the caches
// are cold, and Run returns nil when its context ends.
func TestAssembleAndRun(t *testing.T) {
	c := Defaults()
	c.NodeName, c.ListenAddr, c.OpsAddr, c.LogRoot = "n1", "127.0.0.1:0", "localhost:0", t.TempDir()
	c.AuthAPIURL, c.SATokenFile = "http://127.0.0.1:1", ""
	reg := prometheus.NewRegistry()
	d, err := Assemble(c, Deps{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Registry: reg, Sources: unreachableClients(t)})
	if err != nil {
		t.Fatal(err)
	}
	if d.Addr() == "" || d.OpsAddr() == "" || d.TLSAddr() != "" || d.EgressAddr() != "" {
		t.Errorf("addresses: listen %q ops %q tls %q egress %q", d.Addr(), d.OpsAddr(), d.TLSAddr(), d.EgressAddr())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	for path, want := range map[string]int{"/healthz": http.StatusOK, "/readyz": http.StatusServiceUnavailable} {
		resp, err := http.Get("http://" + d.OpsAddr() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	if mfs, err := reg.Gather(); err != nil || len(mfs) == 0 {
		t.Errorf("registry gathered %d families, %v", len(mfs), err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestFinalActivityReport: after the drain the daemon reports its activity
// once more, so requests that ended during it are not lost to the sweeper.
func TestFinalActivityReport(t *testing.T) {
	reports := make(chan activity.Report, 8)
	authAPI := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rep activity.Report
		if r.URL.Path != nodeproxy.DefaultActivityPath || json.NewDecoder(r.Body).Decode(&rep) != nil {
			http.Error(w, "unexpected", http.StatusBadRequest)
			return
		}
		reports <- rep
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(authAPI.Close)
	c := Defaults()
	c.NodeName, c.ListenAddr, c.OpsAddr, c.LogRoot = "n1", "127.0.0.1:0", "localhost:0", t.TempDir()
	c.AuthAPIURL, c.SATokenFile, c.ReportInterval = authAPI.URL, "", time.Hour
	d, err := Assemble(c, Deps{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Registry: prometheus.NewRegistry(), Sources: unreachableClients(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	if rep := <-reports; rep.Node != "n1" {
		t.Errorf("first report from %q", rep.Node)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	select {
	case rep := <-reports:
		if rep.Node != "n1" {
			t.Errorf("final report from %q", rep.Node)
		}
	default:
		t.Error("no activity report after the drain")
	}
}
