package nodeproxy_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/sandgate/sandgate/internal/accountpath/authapi"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/platformtest"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// e2eSuspendBound is how soon after its last traffic an idle sandbox must be
// suspended: IDLE_TIMEOUT + 2 x REPORT_INTERVAL, plus slack for a loaded
// two-core machine running the API server, the cluster and the platform.
const e2eSuspendBound = platformtest.IdleTimeout + 2*platformtest.ReportInterval + 3*time.Second

// TestE2EIdle runs the must-show list of the idle-suspend issue on the
// real API server, the simulated two-node cluster, two auth API replicas
// with leader-elected sweepers and two node proxies reporting activity,
// once with the controller stand-in of each agent-sandbox release sandgate
// supports (v1.0.13: no pod-name annotation; v0.5.6: the annotation).
func TestE2EIdle(t *testing.T) {
	for _, r := range controller.Releases() {
		t.Run(string(r), func(t *testing.T) { e2eIdle(t, r) })
	}
}

func e2eIdle(t *testing.T, release controller.Release) {
	p := startPlatformWith(t, platformOptions{Idle: true, Release: release})
	testkit.Eventually(t, "a sweeper leader", func() bool {
		for _, s := range p.sweepers {
			if s.Leading() {
				return true
			}
		}
		return false
	})
	carol := p.signup(0, "carol")
	carolCookie := map[string]string{"Cookie": cookie(carol.session)}
	lastUse := time.Now() // signup's last request has been answered
	sandbox := p.sandboxOf("carol")
	sb, err := p.sb.Sandboxes(p.ns).Get(t.Context(), sandbox, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, annotated := sb.Annotations[agents.AnnotationPodName]; annotated != (release == controller.ReleaseV05) {
		t.Fatalf("%s stand-in: pod-name annotation %q, want it only from v0.5.6", release, sb.Annotations[agents.AnnotationPodName])
	}
	modes := p.watchMode(sandbox)
	home := p.podNode("carol")
	other := 1 - home

	t.Run("idle sandbox suspended in time", func(t *testing.T) {
		at := modes.waitFor(t, agents.OperatingModeSuspended, lastUse)
		lag := at.Sub(lastUse)
		t.Logf("suspended %v after the last request (bound %v)", lag.Round(time.Millisecond), e2eSuspendBound)
		if lag > e2eSuspendBound {
			t.Errorf("suspended %v after the last request, want at most %v", lag, e2eSuspendBound)
		}
		if lag < platformtest.IdleTimeout {
			t.Errorf("suspended %v after the last request, before IDLE_TIMEOUT %v", lag, platformtest.IdleTimeout)
		}
	})

	t.Run("request to a suspended sandbox held, then served", func(t *testing.T) {
		p.waitRoutedSuspended(t, "carol")
		before := p.wakePatches.Load()
		start := time.Now()
		resp := p.get(other, "/u/carol/api/echo", carolCookie)
		body := readAll(t, resp)
		lat := time.Since(start)
		t.Logf("wake through %s (not the pod's node): %d after %v", p.nodes[other].name, resp.StatusCode, lat.Round(time.Millisecond))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("held request: %d %s", resp.StatusCode, body)
		}
		if n := p.wakePatches.Load() - before; n != 1 {
			t.Errorf("%d wake patches, want 1", n)
		}
		if m := modes.last(); m != agents.OperatingModeRunning {
			t.Errorf("operating mode %q after the wake", m)
		}
	})

	t.Run("20 concurrent requests, one wake patch", func(t *testing.T) {
		mark := time.Now()
		modes.waitFor(t, agents.OperatingModeSuspended, mark)
		p.waitRoutedSuspended(t, "carol")
		// Through the node that woke it last, within WAKE_TIMEOUT of that
		// wake: seeing it Ready ended the wake, so the node calls again.
		node := other
		before := p.wakePatches.Load()
		start := time.Now()
		var wg sync.WaitGroup
		codes := make([]int, 20)
		lats := make([]time.Duration, 20)
		for i := range codes {
			wg.Go(func() {
				req, _ := http.NewRequest(http.MethodGet, "http://"+p.nodes[node].addr+"/u/carol/api/echo", nil)
				req.Host = testHost
				req.Header.Set("Cookie", cookie(carol.session))
				resp, err := e2eClient.Do(req)
				if err != nil {
					t.Errorf("request %d: %v", i, err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				codes[i], lats[i] = resp.StatusCode, time.Since(start)
			})
		}
		wg.Wait()
		for i, c := range codes {
			if c != http.StatusOK {
				t.Errorf("request %d: %d", i, c)
			}
		}
		slowest := time.Duration(0)
		for _, l := range lats {
			slowest = max(slowest, l)
		}
		t.Logf("20 concurrent through %s: all answered within %v", p.nodes[node].name, slowest.Round(time.Millisecond))
		if n := p.wakePatches.Load() - before; n != 1 {
			t.Errorf("%d wake patches, want exactly 1", n)
			for _, l := range strings.Split(p.logs.String(), "\n") {
				if strings.Contains(strings.ToLower(l), "wake") {
					t.Log(l)
				}
			}
		}
		if n := modes.transitionsTo(agents.OperatingModeRunning, start); n != 1 {
			t.Errorf("%d transitions to Running, want 1", n)
		}
	})

	t.Run("SSE stream through one node keeps it awake", func(t *testing.T) {
		p.wake(t, "carol", carolCookie)
		via := 1 - p.podNode("carol")
		resp := p.get(via, "/u/carol/api/events", carolCookie)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("events: %d", resp.StatusCode)
		}
		start := time.Now()
		events := 0
		sc := bufio.NewScanner(resp.Body)
		for time.Since(start) < e2eSuspendBound+time.Second && sc.Scan() {
			if strings.HasPrefix(sc.Text(), "data:") {
				events++
			}
		}
		resp.Body.Close()
		closed := time.Now()
		t.Logf("read %d events through %s for %v", events, p.nodes[via].name, closed.Sub(start).Round(time.Millisecond))
		if n := modes.transitionsTo(agents.OperatingModeSuspended, start); n != 0 {
			t.Fatalf("suspended %d times while its SSE stream through %s was open", n, p.nodes[via].name)
		}
		at := modes.waitFor(t, agents.OperatingModeSuspended, closed)
		if lag := at.Sub(closed); lag > e2eSuspendBound {
			t.Errorf("suspended %v after the stream closed, want at most %v", lag, e2eSuspendBound)
		}
	})

	t.Run("WebSocket traffic through one node keeps it awake, silence does not", func(t *testing.T) {
		p.waitRoutedSuspended(t, "carol")
		p.wake(t, "carol", carolCookie)
		via := 1 - p.podNode("carol") // the node that hops
		c := p.dialWS(t, via, "carol", carol.session)
		start := time.Now()
		busy := e2eSuspendBound + time.Second
		for n := 0; time.Since(start) < busy; n++ {
			msg := fmt.Sprintf("msg %d", n)
			sent := time.Now()
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
				t.Fatalf("write after %v: %v", time.Since(start), err)
			}
			if _, got, err := c.ReadMessage(); err != nil || string(got) != msg {
				t.Fatalf("echo after %v: %q %v", time.Since(start), got, err)
			}
			// The next message once this one's traffic has reached the
			// sweeping leader, in a node's activity report.
			testkit.Eventually(t, "the leader seeing "+msg, func() bool {
				last, _, ok := p.leaderIdle(sandbox)
				return ok && !last.Before(sent.Add(-trackerResolution))
			})
		}
		if n := modes.transitionsTo(agents.OperatingModeSuspended, start); n != 0 {
			t.Fatalf("suspended %d times while its WebSocket through %s carried traffic", n, p.nodes[via].name)
		}
		silent := time.Now()
		drain(c)
		at := modes.waitFor(t, agents.OperatingModeSuspended, silent)
		lag := at.Sub(silent)
		t.Logf("open, silent WebSocket: suspended %v after its last frame (bound %v)", lag.Round(time.Millisecond), e2eSuspendBound)
		if lag > e2eSuspendBound {
			t.Errorf("suspended %v after the last frame, want at most %v", lag, e2eSuspendBound)
		}
	})

	t.Run("internal endpoints refuse anonymous callers and other ServiceAccounts", func(t *testing.T) {
		// Idle since the last subtest, the sandbox is suspended; a refused
		// wake must leave it so.
		p.waitRoutedSuspended(t, "carol")
		other, err := p.cp.ServiceAccountToken(context.Background(), p.ns, "intruder", 600, authapi.DefaultInternalAudience)
		if err != nil {
			t.Fatal(err)
		}
		report := fmt.Sprintf(`{"node":%q,"entries":[]}`, p.nodes[0].name)
		for _, url := range p.authURLs {
			for _, ep := range []struct{ path, body string }{
				{"/internal/v1/activity", report},
				{"/internal/v1/wake", `{"user":"carol"}`},
			} {
				for _, tok := range []struct{ who, token string }{{"anonymous", ""}, {"another ServiceAccount", other}} {
					req, _ := http.NewRequest(http.MethodPost, url+ep.path, strings.NewReader(ep.body))
					req.Header.Set("Content-Type", "application/json")
					if tok.token != "" {
						req.Header.Set("Authorization", "Bearer "+tok.token)
					}
					resp, err := e2eClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					readAll(t, resp)
					if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
						t.Errorf("%s %s from %s: %d, want 401 or 403", url, ep.path, tok.who, resp.StatusCode)
					}
				}
			}
		}
		if m := modes.last(); m != agents.OperatingModeSuspended {
			t.Errorf("operating mode %q: a refused wake woke it", m)
		}
	})
}

// TestE2EIdleCountingOpenConnections runs the platform with
// IDLE_COUNTS_OPEN_CONNECTIONS=true: an open WebSocket that carries nothing
// keeps its sandbox awake until it closes.
func TestE2EIdleCountingOpenConnections(t *testing.T) {
	p := startPlatformWith(t, platformOptions{Idle: true, CountOpenConnections: true})
	dave := p.signup(0, "dave")
	sandbox := p.sandboxOf("dave")
	modes := p.watchMode(sandbox)
	via := 1 - p.podNode("dave")
	c := p.dialWS(t, via, "dave", dave.session)
	drain(c)
	opened := time.Now()
	// The leader holds the sandbox awake for the open WebSocket, longer
	// after its last traffic than an idle one stays running.
	testkit.Eventually(t, "the leader holding dave's sandbox awake past the suspend bound", func() bool {
		last, suspendAt, ok := p.leaderIdle(sandbox)
		return ok && suspendAt.IsZero() && time.Since(last) > e2eSuspendBound
	})
	if n := modes.transitionsTo(agents.OperatingModeSuspended, opened); n != 0 {
		t.Fatalf("suspended %d times while a WebSocket through %s was open", n, p.nodes[via].name)
	}
	c.Close()
	closed := time.Now()
	at := modes.waitFor(t, agents.OperatingModeSuspended, closed)
	t.Logf("suspended %v after the WebSocket closed (bound %v)", at.Sub(closed).Round(time.Millisecond), e2eSuspendBound)
	if lag := at.Sub(closed); lag > e2eSuspendBound {
		t.Errorf("suspended %v after the WebSocket closed, want at most %v", lag, e2eSuspendBound)
	}
}

// wake makes sure user's sandbox runs: a request through node 0 is held
// until it is Ready.
func (p *platform) wake(t *testing.T, user string, hdr map[string]string) {
	t.Helper()
	resp := p.get(0, "/u/"+user+"/api/echo", hdr)
	if body := readAll(t, resp); resp.StatusCode != http.StatusOK {
		t.Fatalf("wake %s: %d %s", user, resp.StatusCode, body)
	}
}

// dialWS opens user's app WebSocket through node i with session.
func (p *platform) dialWS(t *testing.T, i int, user, session string) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	hdr := http.Header{"Cookie": {cookie(session)}, "Host": {testHost}, "Origin": {"http://" + testHost}}
	c, _, err := d.DialContext(context.Background(), "ws://"+p.nodes[i].addr+"/u/"+user+"/api/ws", hdr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// drain reads c in the background until it closes, so pings are answered
// and close frames seen while the test sends nothing.
func drain(c *websocket.Conn) {
	go func() {
		c.SetReadDeadline(time.Time{})
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	}()
}

// trackerResolution is how often a node's activity table writes one
// sandbox's last-traffic time at most.
const trackerResolution = 50 * time.Millisecond

// leaderIdle is the sweeping leader's view of sandbox: its last traffic and
// when it is to be suspended (zero while open work holds it awake); ok is
// false while no replica leads.
func (p *platform) leaderIdle(sandbox string) (lastActive, suspendAt time.Time, ok bool) {
	sb := &agents.Sandbox{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: sandbox}}
	for _, s := range p.sweepers {
		if v := s.Idle(nil, sb, time.Now()); v.Exact {
			return v.LastActive, v.At, true
		}
	}
	return time.Time{}, time.Time{}, false
}

// sandboxOf returns the name of the Sandbox user's claim adopted.
func (p *platform) sandboxOf(user string) string {
	p.t.Helper()
	e, err := p.nodes[0].idx.Lookup(user)
	if err != nil || e.Route.Sandbox == "" {
		p.t.Fatalf("%s has no sandbox: %v", user, err)
	}
	return e.Route.Sandbox
}

// waitRoutedSuspended waits until both node proxies see user's sandbox as
// Suspended, so that the next request meets wake-on-connect.
func (p *platform) waitRoutedSuspended(t *testing.T, user string) {
	t.Helper()
	testkit.Eventually(t, user+" suspended on every node", func() bool {
		for _, n := range p.nodes {
			e, err := n.idx.Lookup(user)
			if err != nil || e.Route.State != informer.StateSuspended {
				return false
			}
		}
		return true
	})
}

// modeEvent is a change of a Sandbox's spec.operatingMode, as watched.
type modeEvent struct {
	at   time.Time
	mode agents.OperatingMode
}

// modeWatch records the operating mode changes of one Sandbox.
type modeWatch struct {
	mu     sync.Mutex
	events []modeEvent
}

// watchMode watches Sandbox name until the test ends.
func (p *platform) watchMode(name string) *modeWatch {
	t := p.t
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	client := p.sb.Sandboxes(p.ns)
	sel := metav1.ListOptions{FieldSelector: "metadata.name=" + name}
	list, err := client.List(ctx, sel)
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("list sandbox %s: %v", name, err)
	}
	m := &modeWatch{events: []modeEvent{{time.Now(), list.Items[0].Spec.OperatingMode}}}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel.FieldSelector
			return client.Watch(ctx, o)
		},
	})
	if err != nil {
		t.Fatalf("watch sandbox %s: %v", name, err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			sb, ok := ev.Object.(*agents.Sandbox)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			m.mu.Lock()
			if m.events[len(m.events)-1].mode != sb.Spec.OperatingMode {
				m.events = append(m.events, modeEvent{time.Now(), sb.Spec.OperatingMode})
			}
			m.mu.Unlock()
		}
	}()
	return m
}

func (m *modeWatch) last() agents.OperatingMode {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.events[len(m.events)-1].mode
}

// transitionsTo counts changes to mode seen after since.
func (m *modeWatch) transitionsTo(mode agents.OperatingMode, since time.Time) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.events[1:] {
		if e.mode == mode && !e.at.Before(since) {
			n++
		}
	}
	return n
}

// waitFor waits for a change to mode after since and returns when it was
// seen.
func (m *modeWatch) waitFor(t *testing.T, mode agents.OperatingMode, since time.Time) time.Time {
	t.Helper()
	var at time.Time
	testkit.Eventually(t, "operating mode "+string(mode), func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, e := range m.events[1:] {
			if e.mode == mode && !e.at.Before(since) {
				at = e.at
				return true
			}
		}
		return false
	})
	return at
}
