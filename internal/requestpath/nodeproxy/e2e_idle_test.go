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

	"github.com/sandgate/sandgate/internal/accountpath/authapi"
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
		failed := false
		for i, c := range codes {
			if c != http.StatusOK {
				t.Errorf("request %d: %d", i, c)
				failed = true
			}
		}
		if failed {
			p.logLinesWith(t, `"status":5`, "wake", "error")
		}
		slowest := time.Duration(0)
		for _, l := range lats {
			slowest = max(slowest, l)
		}
		t.Logf("20 concurrent through %s: all answered within %v", p.nodes[node].name, slowest.Round(time.Millisecond))
		if n := p.wakePatches.Load() - before; n != 1 {
			t.Errorf("%d wake patches, want exactly 1", n)
			p.logLinesWith(t, "wake")
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

// logLinesWith logs the platform's log lines that hold any of words (case
// folded), for a failure to explain itself.
func (p *platform) logLinesWith(t *testing.T, words ...string) {
	t.Helper()
	for _, l := range strings.Split(p.logs.String(), "\n") {
		for _, w := range words {
			if strings.Contains(strings.ToLower(l), strings.ToLower(w)) {
				t.Log(l)
				break
			}
		}
	}
}
