package nodeproxy_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

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
