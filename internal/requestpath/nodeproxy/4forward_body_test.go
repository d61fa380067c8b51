package nodeproxy

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/testing/sim/agentapp"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestBodies(t *testing.T) {
	h := newHarness(t, harnessOpts{modify: func(o *Options) {
		o.MaxBodyBytes = 1 << 20
		o.BufferBodyBytes = 64 << 10
	}})
	h.addUser("alice", "node-a")
	hdr := map[string]string{"Cookie": cookie(h.session("alice"))}
	post := func(body io.Reader) *http.Response {
		return h.do(http.MethodPost, "node-a", "/u/alice/api/echo", body, hdr)
	}
	for name, tc := range map[string]struct {
		body   io.Reader
		status int
		length int64
	}{
		"small buffered":       {strings.NewReader(strings.Repeat("a", 1000)), 200, 1000},
		"large streamed":       {strings.NewReader(strings.Repeat("b", 700<<10)), 200, 700 << 10},
		"chunked streamed":     {io.MultiReader(strings.NewReader(strings.Repeat("c", 300<<10))), 200, 300 << 10},
		"declared too large":   {strings.NewReader(strings.Repeat("d", 1<<20+1)), 413, 0},
		"chunked too large":    {io.MultiReader(strings.NewReader(strings.Repeat("e", 2<<20))), 413, 0},
		"exactly at the limit": {strings.NewReader(strings.Repeat("f", 1<<20)), 200, 1 << 20},
	} {
		t.Run(name, func(t *testing.T) {
			resp := post(tc.body)
			body := readAll(t, resp)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, body, tc.status)
			}
			if tc.status == 200 {
				var e agentapp.Echo
				if err := json.Unmarshal([]byte(body), &e); err != nil || e.BodyLength != tc.length {
					t.Errorf("app read %d bytes (%v), want %d", e.BodyLength, err, tc.length)
				}
			}
		})
	}
}

// TestExpectContinueTooLarge: a client that asks first is refused before
// it sends the body.
func TestExpectContinueTooLarge(t *testing.T) {
	h := newHarness(t, harnessOpts{modify: func(o *Options) { o.MaxBodyBytes = 1000 }})
	h.addUser("alice", "node-a")
	status := h.rawRequest("node-a", "PUT /u/alice/api/files/big HTTP/1.1\r\nHost: "+testHost+
		"\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n")
	if !strings.Contains(status, " 413 ") {
		t.Errorf("Expect: 100-continue with a large body: %q, want 413", status)
	}
	testkit.Eventually(t, "413 logged", func() bool {
		for _, l := range accessLines(t, h.logs) {
			if l["status"] == float64(413) {
				return true
			}
		}
		return false
	})
}

// TestAbortedUploadNeverReachesApp: a client that sends headers and half
// its body, then hangs up, is logged as 499 and the app sees nothing.
func TestAbortedUploadNeverReachesApp(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	alice := h.addUser("alice", "node-a")
	c, err := net.Dial("tcp", h.nodes["node-a"].addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, "POST /u/alice/api/echo HTTP/1.1\r\nHost: "+testHost+"\r\nCookie: "+cookie(h.session("alice"))+
		"\r\nContent-Length: 1000\r\n\r\n"+strings.Repeat("x", 500))
	testkit.Eventually(t, "the upload in flight", func() bool { return h.nodes["node-a"].proxy.inflight.count("alice") == 1 })
	c.Close()
	testkit.Eventually(t, "499 in the access log", func() bool {
		for _, l := range accessLines(t, h.logs) {
			if l["status"] == float64(499) && l["user"] == "alice" {
				return true
			}
		}
		return false
	})
	// The handshake's token exchange (GET /?token=) may run before the
	// body is read; the upload itself must not arrive.
	for _, path := range alice.log.requests() {
		if path != "/" {
			t.Errorf("the app received %s", path)
		}
	}
	if n := h.nodes["node-a"].proxy.inflight.count("alice"); n != 0 {
		t.Errorf("%d in-flight slots still held", n)
	}
}

// TestUpstream401RefreshesOnce: after the app restarts (new token, old
// cookies refused) the proxy refreshes the handshake once and retries.
func TestUpstream401RefreshesOnce(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	alice := h.addUser("alice", "node-a")
	hdr := map[string]string{"Cookie": cookie(h.session("alice"))}
	echo(t, h.get("node-a", "/u/alice/api/echo", hdr))
	alice.restart()
	resp := h.do(http.MethodPost, "node-a", "/u/alice/api/echo", strings.NewReader("payload"), hdr)
	if e := echo(t, resp); e.BodyLength != 7 {
		t.Errorf("retried request body %d bytes, want 7", e.BodyLength)
	}
	var retried bool
	for _, l := range accessLines(t, h.logs) {
		if l["retried_401"] == true {
			retried = true
		}
	}
	if !retried {
		t.Error("access log does not record the retry")
	}

	// The WebSocket dial refreshes the same way.
	alice.restart()
	c, _, err := h.dialWS("node-a", "/u/alice/api/ws", http.Header{"Cookie": {cookie(h.session("alice"))}})
	if err != nil {
		t.Fatal(err)
	}
	echoes(t, c, "after an app restart")
}

// TestInFlightCap: MAX_IN_FLIGHT_PER_USER counts streams and WebSockets;
// past it HTTP gets 503 + Retry-After. Other users are unaffected.
func TestInFlightCap(t *testing.T) {
	h := newHarness(t, harnessOpts{modify: func(o *Options) { o.MaxInFlightPerUser = 1 }})
	h.addUser("alice", "node-a")
	h.addUser("bob", "node-a")
	alice := map[string]string{"Cookie": cookie(h.session("alice"))}
	stream := h.get("node-a", "/u/alice/api/events", alice)
	if stream.StatusCode != 200 {
		t.Fatalf("event stream: %d", stream.StatusCode)
	}
	resp := h.get("node-a", "/u/alice/api/echo", alice)
	readAll(t, resp)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("over the cap: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	echo(t, h.get("node-a", "/u/bob/api/echo", map[string]string{"Cookie": cookie(h.session("bob"))}))
	stream.Body.Close()
	testkit.Eventually(t, "slot released", func() bool { return h.nodes["node-a"].proxy.inflight.count("alice") == 0 })
	echo(t, h.get("node-a", "/u/alice/api/echo", alice))
}

func TestSuspendedAndNotReady(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.addUser("alice", "node-a")
	hdr := map[string]string{"Cookie": cookie(h.session("alice"))}
	for _, state := range []informer.State{informer.StateSuspended, informer.StatePending} {
		h.dir.edit("alice", func(e *informer.Entry) { e.Route.State = state })
		resp := h.get("node-a", "/u/alice/", hdr)
		readAll(t, resp)
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "2" {
			t.Errorf("state %v: %d Retry-After %q", state, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
}

// TestHeadRequest: a HEAD answer keeps the app's headers and has no body.
func TestHeadRequest(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.addUser("alice", "node-a")
	resp := h.do(http.MethodHead, "node-a", "/u/alice/api/echo", nil, map[string]string{"Cookie": cookie(h.session("alice"))})
	if body := readAll(t, resp); resp.StatusCode != 200 || body != "" || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("HEAD: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	// The connection is still usable afterwards.
	echo(t, h.get("node-a", "/u/alice/api/echo", map[string]string{"Cookie": cookie(h.session("alice"))}))
}
