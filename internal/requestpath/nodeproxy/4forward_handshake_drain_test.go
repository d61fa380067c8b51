package nodeproxy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// gatedHandshaker holds every Cookie call until release, then asks the
// real Handshaker. It waits as the Handshaker does: a caller whose ctx
// ends stops waiting.
type gatedHandshaker struct {
	Handshaker
	entered chan struct{}
	release chan struct{}
}

func (g *gatedHandshaker) Cookie(ctx context.Context, t handshake.Target) (string, error) {
	g.entered <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
		return "", fmt.Errorf("wait for handshake: %w", context.Cause(ctx))
	}
	return g.Handshaker.Cookie(ctx, t)
}

// TestHandshakeDrain: a request waiting for its handshake when shutdown
// begins is served once the handshake is done, not cut off by the drain.
func TestHandshakeDrain(t *testing.T) {
	h := newHarness(t, wakeOpts(testkit.Timeout, nil))
	h.addUser("alice", "node-a")
	h.addUser("bob", "node-a")
	h.suspend("bob") // and never Ready again
	// A second proxy on the same collaborators, which this test stops.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gate := &gatedHandshaker{entered: make(chan struct{}, 1), release: make(chan struct{})}
	_, cancel, done := h.stoppingProxy(ln, func(o *Options) { gate.Handshaker, o.Handshaker = o.Handshaker, gate })

	type answer struct {
		status int
		body   string
		err    error
	}
	get := func(user string) <-chan answer {
		out := make(chan answer, 1)
		req, err := http.NewRequest(http.MethodGet, h.url("stopping", "/u/"+user+"/api/echo"), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = testHost
		req.Header.Set("Cookie", cookie(h.session(user)))
		req.Header.Set("Accept", "application/json")
		go func() {
			resp, err := h.client.Do(req)
			if err != nil {
				out <- answer{err: err}
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			out <- answer{resp.StatusCode, string(body), err}
		}()
		return out
	}
	alice := get("alice")
	testkit.Receive(t, "alice's request waiting for its handshake", gate.entered)
	bob := get("bob")
	testkit.Eventually(t, "bob's request held while his sandbox wakes", func() bool { return h.auth.wakes.Load() == 1 })

	cancel()
	// The held wake ends with the drain: by then the drain has begun for
	// alice's request too.
	if a := testkit.Receive(t, "bob's answer", bob); a.err != nil || a.status != http.StatusServiceUnavailable {
		t.Fatalf("held wake at shutdown: %d %s %v, want 503", a.status, a.body, a.err)
	}
	close(gate.release)
	if a := testkit.Receive(t, "alice's answer", alice); a.err != nil || a.status != http.StatusOK {
		t.Errorf("handshake waited through the drain: %d %s %v, want 200", a.status, a.body, a.err)
	}
	if err := testkit.Receive(t, "Serve's return", done); err != nil {
		t.Errorf("Serve: %v", err)
	}
}
