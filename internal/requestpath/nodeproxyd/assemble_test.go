package nodeproxyd

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"

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
