package nodeproxy

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// WaitReady lets the harness's node view stand in for the informer index.
// It polls (the real index waits for informer events).
func (n *nodeDir) WaitReady(ctx context.Context, user, away string) (informer.Entry, error) {
	for {
		edited := n.d.watch()
		e, err := n.Lookup(user)
		if err != nil || e.Route.Routable(away) {
			return e, err
		}
		select {
		case <-ctx.Done():
			return e, context.Cause(ctx)
		case <-edited:
		}
	}
}

// wakeOpts turns wake-on-connect on with timeout.
func wakeOpts(timeout time.Duration, tracker *activity.Tracker) harnessOpts {
	return harnessOpts{modify: func(o *Options) {
		o.Waiter = o.Directory.(*nodeDir)
		o.WakeTimeout = timeout
		o.Activity = tracker
		o.Namespace = testNS
	}}
}

// suspend marks user's sandbox Suspended and returns its Ready entry.
func (h *harness) suspend(user string) informer.Entry {
	h.t.Helper()
	ready, err := h.dir.Lookup(user)
	if err != nil {
		h.t.Fatal(err)
	}
	h.dir.edit(user, func(e *informer.Entry) {
		e.Route = informer.Route{State: informer.StateSuspended, Sandbox: ready.Route.Sandbox}
	})
	return ready
}

// suspendUntilWoken suspends user's sandbox; a wake call brings it back
// Ready after delay, as the controller takes a moment to.
func (h *harness) suspendUntilWoken(user string, delay time.Duration) {
	h.t.Helper()
	ready := h.suspend(user)
	h.auth.setOnWake(func(user string) {
		time.AfterFunc(delay, func() { h.dir.set(user, ready) })
	})
}

func TestWakeOnConnectOneCallThenServed(t *testing.T) {
	h := newHarness(t, wakeOpts(10*time.Second, nil))
	h.addUser("alice", "node-a")
	h.suspendUntilWoken("alice", 300*time.Millisecond)
	hdr := map[string]string{"Authorization": "Bearer tok-alice"}

	const n = 20
	var wg sync.WaitGroup
	codes := make([]int, n)
	bodies := make([]string, n)
	start := time.Now()
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, h.url("node-a", "/u/alice/api/echo"), nil)
			req.Host = testHost
			for k, v := range hdr {
				req.Header.Set(k, v)
			}
			resp, err := h.client.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			codes[i] = resp.StatusCode
			bodies[i] = readAll(t, resp)
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != 200 {
			t.Errorf("request %d: %d %s", i, c, bodies[i])
		}
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("served after %v: not held until Ready", d)
	}
	if got := h.auth.wakes.Load(); got != 1 {
		t.Errorf("%d wake calls for %d concurrent requests, want 1", got, n)
	}
	reg := h.nodes["node-a"].reg
	if got := testutil.ToFloat64(h.nodes["node-a"].proxy.m.wakes.WithLabelValues(wakeReady)); got != n {
		t.Errorf("wakes{result=ready} %v, want %d", got, n)
	}
	if c, err := testutil.GatherAndCount(reg, "sandgate_nodeproxy_wake_duration_seconds"); err != nil || c != 1 {
		t.Errorf("wake latency histogram: %d series, %v", c, err)
	}
}

// TestSuspendedAgainIsWokenAgain: a sandbox suspended again right after a
// wake gets a new wake call, not the memory of the last one.
func TestSuspendedAgainIsWokenAgain(t *testing.T) {
	h := newHarness(t, wakeOpts(10*time.Second, nil))
	h.addUser("alice", "node-a")
	h.suspendUntilWoken("alice", 50*time.Millisecond)
	hdr := map[string]string{"Authorization": "Bearer tok-alice"}
	for round := 1; round <= 2; round++ {
		if round == 2 {
			h.suspend("alice")
		}
		resp := h.get("node-a", "/u/alice/api/echo", hdr)
		readAll(t, resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("round %d: %d", round, resp.StatusCode)
		}
		if got := h.auth.wakes.Load(); got != int32(round) {
			t.Fatalf("round %d: %d wake calls, want %d", round, got, round)
		}
	}
}

func TestWakeTimeout(t *testing.T) {
	h := newHarness(t, wakeOpts(300*time.Millisecond, nil))
	h.addUser("alice", "node-a")
	h.suspend("alice") // and never Ready again
	sess := cookie(h.session("alice"))

	// An API client: 503 + Retry-After after WAKE_TIMEOUT.
	start := time.Now()
	resp := h.get("node-a", "/u/alice/api/echo", map[string]string{"Cookie": sess, "Accept": "application/json"})
	body := readAll(t, resp)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || strings.Contains(body, "<html") {
		t.Errorf("API client: %d Retry-After %q %q", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("answered after %v, before WAKE_TIMEOUT", d)
	}
	// A browser navigation: the self-retrying waking page.
	h.clock.Advance(300 * time.Millisecond) // past the first call's WAKE_TIMEOUT
	resp = h.get("node-a", "/u/alice/", map[string]string{"Cookie": sess, "Accept": "text/html,application/xhtml+xml"})
	body = readAll(t, resp)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(body, `http-equiv="refresh"`) || !strings.Contains(body, "Waking your agent") {
		t.Errorf("navigation: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if strings.Contains(body, "src=") || strings.Contains(body, "href=") {
		t.Errorf("waking page loads external assets: %s", body)
	}
	// A POST is never a navigation.
	h.clock.Advance(300 * time.Millisecond)
	resp = h.do(http.MethodPost, "node-a", "/u/alice/api/echo", strings.NewReader("x"), map[string]string{"Cookie": sess, "Accept": "text/html"})
	if body := readAll(t, resp); resp.StatusCode != 503 || strings.Contains(body, "<html") {
		t.Errorf("POST: %d %q", resp.StatusCode, body)
	}
	// Each request came after the previous call's WAKE_TIMEOUT ran out, so
	// each asked again: one call per sandbox per WAKE_TIMEOUT.
	if got := h.auth.wakes.Load(); got != 3 {
		t.Errorf("%d wake calls, want 3", got)
	}
	// The navigation was answered by the waking page: not a timeout.
	wakes := h.nodes["node-a"].proxy.m.wakes
	if got := testutil.ToFloat64(wakes.WithLabelValues(wakeTimeout)); got != 2 {
		t.Errorf("wakes{result=timeout} %v, want 2", got)
	}
	if got := testutil.ToFloat64(wakes.WithLabelValues(wakePage)); got != 1 {
		t.Errorf("wakes{result=page} %v, want 1", got)
	}
}

// TestWakingPageReloadIsNotATimeout: each load and reload of the waking
// page is counted as a page, never as a wake that timed out, however long
// before WAKE_TIMEOUT it comes.
func TestWakingPageReloadIsNotATimeout(t *testing.T) {
	h := newHarness(t, wakeOpts(time.Minute, nil))
	h.addUser("alice", "node-a")
	h.suspend("alice")
	sess := cookie(h.session("alice"))
	const loads = 3
	for i := range loads {
		resp := h.get("node-a", "/u/alice/", navigationHeaders(map[string]string{"Cookie": sess}))
		if body := readAll(t, resp); resp.StatusCode != 503 || !strings.Contains(body, "Waking your agent") {
			t.Fatalf("load %d: %d %s", i, resp.StatusCode, body)
		}
	}
	wakes := h.nodes["node-a"].proxy.m.wakes
	if got := testutil.ToFloat64(wakes.WithLabelValues(wakeTimeout)); got != 0 {
		t.Errorf("wakes{result=timeout} %v after %d waking pages, want 0", got, loads)
	}
	if got := testutil.ToFloat64(wakes.WithLabelValues(wakePage)); got != loads {
		t.Errorf("wakes{result=page} %v, want %d", got, loads)
	}
}

func TestActivityReported(t *testing.T) {
	tracker := activity.New(activity.Options{})
	h := newHarness(t, wakeOpts(5*time.Second, tracker))
	h.addUser("alice", "node-a")
	rep, err := activity.NewReporter(activity.ReporterOptions{
		Tracker: tracker, Node: "node-a", Sender: h.nodes["node-a"].proxy.ActivitySender(), Interval: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rep.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	before := time.Now().UnixMilli()
	echo(t, h.get("node-a", "/u/alice/api/echo", map[string]string{"Authorization": "Bearer tok-alice"}))
	testkit.Eventually(t, "a report with alice's sandbox", func() bool {
		for _, r := range h.auth.allReports() {
			for _, e := range r.Entries {
				if e.Key() == (activity.Key{Namespace: testNS, Name: "sb-alice"}) && e.LastActivity >= before && e.InFlight == 0 {
					return r.Node == "node-a"
				}
			}
		}
		return false
	})
	// Requests are counted while in flight: Begin and End pair up.
	snap := tracker.Snapshot()
	if len(snap) != 1 || snap[0].InFlight != 0 || snap[0].OpenWebSockets != 0 {
		t.Errorf("table after the request: %+v", snap)
	}
}

// TestWebSocketActivity: an open WebSocket is counted as open, not in
// flight; data frames are traffic, pings are not; closing ends it.
func TestWebSocketActivity(t *testing.T) {
	tracker := activity.New(activity.Options{})
	h := newHarness(t, wakeOpts(5*time.Second, tracker))
	h.addUser("alice", "node-a")
	c, resp, err := h.dialWS("node-a", "/u/alice/api/ws", http.Header{"Cookie": {cookie(h.session("alice"))}})
	if err != nil {
		t.Fatalf("dial: %v (%v)", err, resp)
	}
	entry := func() activity.Entry {
		s := tracker.Snapshot()
		if len(s) != 1 {
			t.Fatalf("table %+v", s)
		}
		return s[0]
	}
	testkit.Eventually(t, "the WebSocket counted open", func() bool { e := entry(); return e.OpenWebSockets == 1 && e.InFlight == 0 })
	quiet := entry().LastActivity
	// The tracker writes an entry's clock at most every 50ms: past that,
	// any traffic would move it.
	testkit.Eventually(t, "past the tracker's write resolution", func() bool {
		return time.Since(time.UnixMilli(quiet)) > 100*time.Millisecond
	})
	pongs, messages := make(chan struct{}, 1), make(chan string, 1)
	c.SetPongHandler(func(string) error {
		select {
		case pongs <- struct{}{}:
		default:
		}
		return nil
	})
	go func() {
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			select {
			case messages <- string(msg):
			case <-t.Context().Done():
				return
			}
		}
	}()
	if err := c.WriteControl(websocket.PingMessage, []byte("ping"), time.Now().Add(testkit.Timeout)); err != nil {
		t.Fatal(err)
	}
	testkit.Receive(t, "the pong", pongs)
	if got := entry().LastActivity; got != quiet {
		t.Errorf("a ping counted as activity: %d -> %d", quiet, got)
	}
	if err := c.WriteMessage(websocket.TextMessage, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if msg := testkit.Receive(t, "the echo", messages); msg != "hello" {
		t.Fatalf("echo %q", msg)
	}
	if got := entry().LastActivity; got <= quiet {
		t.Errorf("a data frame did not count: %d -> %d", quiet, got)
	}
	c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	c.Close()
	testkit.Eventually(t, "the WebSocket counted closed", func() bool { e := entry(); return e.OpenWebSockets == 0 && e.InFlight == 0 })
}

// TestWakeClock: a wait runs while its waking pages keep reloading, however
// long, and ends when the sandbox is Ready or the pages stop; a user who
// closed the tab is not told at the next wake that it is taking long.
func TestWakeClock(t *testing.T) {
	var c wakeClock
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	reload := wakePageRefresh * time.Second
	check := func(what, user string, at, want time.Duration) {
		t.Helper()
		if got := c.waited(user, t0.Add(at)); got != want {
			t.Errorf("%s: %s waited %v, want %v", what, user, got, want)
		}
	}
	check("first page", "bob", 0, 0)
	check("another user's first page", "alice", reload, 0)
	var at time.Duration
	for at = reload; at < 2*pageGap; at += reload {
		check("reloads", "bob", at, at)
	}
	check("the tab closed: a later wake starts anew", "bob", at+pageGap+time.Second, 0)
	check("first page", "carol", 0, 0)
	c.done("carol")
	check("after Ready", "carol", reload, 0)
}
