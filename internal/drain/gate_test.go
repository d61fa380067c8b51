package drain

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// readyOps stands in for a binary's ops handler whose own checks pass.
var readyOps = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = w.Write([]byte("ok\n"))
})

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// drainFrom serves POST /drain as if peer had connected to self.
func drainFrom(h http.Handler, peer, self string) int {
	r := httptest.NewRequest(http.MethodPost, "/drain", nil)
	r.RemoteAddr = peer
	if self != "" {
		ctx := context.WithValue(r.Context(), http.LocalAddrContextKey, net.TCPAddrFromAddrPort(netip.MustParseAddrPort(self)))
		r = r.WithContext(ctx)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

func readyz(h http.Handler) int {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return w.Code
}

// TestDrainOnlyFromInsideThePod: the rule for who may start a drain.
func TestDrainOnlyFromInsideThePod(t *testing.T) {
	for _, tc := range []struct {
		name, peer, self string
		want             int
	}{
		{"loopback", "127.0.0.1:40000", "127.0.0.1:9090", http.StatusOK},
		{"loopback IPv6", "[::1]:40000", "[::1]:9090", http.StatusOK},
		{"loopback mapped", "[::ffff:127.0.0.1]:40000", "[::ffff:127.0.0.1]:9090", http.StatusOK},
		{"own pod address", "10.244.1.7:40000", "10.244.1.7:9090", http.StatusOK},
		{"host network, own node address", "192.168.1.10:40000", "192.168.1.10:9090", http.StatusOK},
		{"another pod", "10.244.1.8:40000", "10.244.1.7:9090", http.StatusForbidden},
		{"the node, seen from a pod", "10.244.1.1:40000", "10.244.1.7:9090", http.StatusForbidden},
		{"another pod, no local address", "10.244.1.8:40000", "", http.StatusForbidden},
		{"unspecified", "0.0.0.0:40000", "0.0.0.0:9090", http.StatusForbidden},
		{"garbage peer", "not-an-address", "10.244.1.7:9090", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := New(0, discard())
			h := g.Wrap(readyOps)
			if got := drainFrom(h, tc.peer, tc.self); got != tc.want {
				t.Errorf("drain from %s to %s: %d, want %d", tc.peer, tc.self, got, tc.want)
			}
			wantReady := http.StatusOK
			if tc.want == http.StatusOK {
				wantReady = http.StatusServiceUnavailable
			}
			if got := readyz(h); got != wantReady {
				t.Errorf("/readyz after the drain request: %d, want %d", got, wantReady)
			}
		})
	}
}

// TestDrainFailsReadinessAtOnceAndAnswersAfterTheDelay: /readyz fails
// while the drain request is still waiting, other paths still pass
// through, and a GET cannot drain.
func TestDrainFailsReadinessAtOnceAndAnswersAfterTheDelay(t *testing.T) {
	g := New(time.Hour, discard())
	srv := httptest.NewServer(g.Wrap(readyOps))
	defer srv.Close()
	if resp, err := http.Get(srv.URL + "/drain"); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET /drain: %v %v", resp, err)
	}
	if readyz(g.Wrap(readyOps)) != http.StatusOK {
		t.Fatal("/readyz fails before any drain")
	}
	ctx, cancel := context.WithCancel(context.Background())
	answered := make(chan error, 1)
	go func() { answered <- Request(ctx, srv.Listener.Addr().String(), time.Hour) }()
	testkit.Eventually(t, "drain begun", func() bool {
		select {
		case err := <-answered:
			t.Fatalf("drain answered before it began: %v", err)
		default:
		}
		return g.Draining()
	})
	resp, err := http.Get(srv.URL + "/readyz")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("/readyz while draining: %v %v", resp, err)
	}
	if resp, err := http.Get(srv.URL + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz while draining: %v %v", resp, err)
	}
	select {
	case err := <-answered:
		t.Fatalf("drain answered before its delay: %v", err)
	default:
	}
	cancel()
	if err := <-answered; err == nil {
		t.Error("a drain given up by its caller reported success")
	}
}

// TestDrainAnswersOnceTheDelayHasPassed.
func TestDrainAnswersOnceTheDelayHasPassed(t *testing.T) {
	g := New(10*time.Millisecond, discard())
	srv := httptest.NewServer(g.Wrap(readyOps))
	defer srv.Close()
	for range 2 {
		if err := Request(context.Background(), srv.Listener.Addr().String(), time.Minute); err != nil {
			t.Fatalf("drain: %v", err)
		}
	}
}

func TestLocalTarget(t *testing.T) {
	for in, want := range map[string]string{
		":9090": "127.0.0.1:9090", "0.0.0.0:9090": "127.0.0.1:9090", "[::]:9090": "127.0.0.1:9090",
		"127.0.0.1:9091": "127.0.0.1:9091", "10.0.0.5:9090": "10.0.0.5:9090", "[::1]:9090": "[::1]:9090",
	} {
		if got, err := localTarget(in); err != nil || got != want {
			t.Errorf("localTarget(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := localTarget("9090"); err == nil {
		t.Error("localTarget accepted an address without a port")
	}
}
