package nodeproxy_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/platformtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// atWorkAllowance is the auth API's BUSY_ALLOWANCE in TestE2EAgentAtWork:
// room for one declaration of three idle timeouts, not for a minute's.
const atWorkAllowance = 8 * time.Second

// TestE2EAgentAtWork is the must-show list of "never suspend an agent in
// the middle of its work", on the real API server with two auth API
// replicas (leader-elected sweepers) and two node proxies whose egress
// listeners front a provider stand-in, no browser connected after signup:
//   - an agent calling the model for three idle timeouts stays Running, and
//     is suspended about IDLE_TIMEOUT after its last call;
//   - an agent that declares itself busy for three idle timeouts stays
//     Running until the declaration ends, then is suspended;
//   - an agent busy for longer than its owner's allowance is suspended when
//     the allowance runs out, with an audit line that says so.
func TestE2EAgentAtWork(t *testing.T) {
	p := startPlatformWith(t, platformOptions{Idle: true, Egress: true, BusyAllowance: atWorkAllowance})
	testkit.Eventually(t, "a sweeper leader", func() bool {
		for _, s := range p.sweepers {
			if s.Leading() {
				return true
			}
		}
		return false
	})
	bound := 2*platformtest.ReportInterval + 3*time.Second
	type worker struct {
		modes   *modeWatch
		sandbox string
		lastUse time.Time // its signup's last request
		until   time.Time // its busy declaration's end
	}
	start := func(user string) (*worker, *agentClient) {
		p.signup(0, user)
		w := &worker{lastUse: time.Now(), sandbox: p.sandboxOf(user)}
		w.modes = p.watchMode(w.sandbox)
		return w, p.agentOf(user)
	}

	carol, agent := start("carol")
	calls := make(chan modelCalls, 1)
	go func() { calls <- agent.callFor(3 * platformtest.IdleTimeout) }()
	dave, agent := start("dave")
	dave.until = agent.busy(t, 3*platformtest.IdleTimeout)
	erin, agent := start("erin")
	erin.until = agent.busy(t, time.Minute)

	t.Run("group", func(t *testing.T) {
		t.Run("model calls keep it awake", func(t *testing.T) {
			t.Parallel()
			c := <-calls
			if c.failed != "" {
				t.Fatalf("model call: %s", c.failed)
			}
			if n := carol.modes.transitionsTo(agents.OperatingModeSuspended, carol.lastUse); n != 0 {
				t.Fatalf("suspended while calling the model for %v with no browser", 3*platformtest.IdleTimeout)
			}
			at := carol.modes.waitFor(t, agents.OperatingModeSuspended, c.last)
			lag := at.Sub(c.last)
			t.Logf("%d calls in %v: suspended %v after the last", c.n, c.last.Sub(c.first).Round(time.Millisecond), lag.Round(time.Millisecond))
			if lag < platformtest.IdleTimeout || lag > platformtest.IdleTimeout+bound {
				t.Errorf("suspended %v after the last model call, want IDLE_TIMEOUT %v to %v", lag, platformtest.IdleTimeout, platformtest.IdleTimeout+bound)
			}
		})
		t.Run("a busy declaration keeps it awake", func(t *testing.T) {
			t.Parallel()
			at := dave.modes.waitFor(t, agents.OperatingModeSuspended, dave.lastUse)
			t.Logf("busy until %v after its last use: suspended %v after that", dave.until.Sub(dave.lastUse).Round(time.Millisecond), at.Sub(dave.until).Round(time.Millisecond))
			if at.Before(dave.until.Add(-100*time.Millisecond)) || at.After(dave.until.Add(bound)) {
				t.Errorf("suspended at %v, want when its declaration ended (%v) or within %v after", at, dave.until, bound)
			}
		})
		t.Run("the allowance runs out", func(t *testing.T) {
			t.Parallel()
			at := erin.modes.waitFor(t, agents.OperatingModeSuspended, erin.lastUse)
			due := erin.lastUse.Add(platformtest.IdleTimeout)
			t.Logf("busy for a minute: suspended %v after its idle deadline (allowance %v)", at.Sub(due).Round(time.Millisecond), atWorkAllowance)
			if at.Before(due.Add(atWorkAllowance-platformtest.ReportInterval)) || at.After(due.Add(atWorkAllowance+bound+2*platformtest.ReportInterval)) {
				t.Errorf("suspended %v after its idle deadline, want about the allowance %v", at.Sub(due), atWorkAllowance)
			}
			testkit.Eventually(t, "the suspend's audit line", func() bool {
				for _, l := range testkit.AuditLines(t, p.logs.String()) {
					if l["action"] == "suspend" && l["sandbox"] == erin.sandbox && l["reason"] == "allowance-used" && l["user"] == "erin" {
						return true
					}
				}
				return false
			})
		})
	})
}

// modelCalls is what callFor did.
type modelCalls struct {
	n           int
	first, last time.Time
	failed      string // the first call that did not answer 200
}

// callFor makes a model call every sixth of IDLE_TIMEOUT for d, as an
// agent at work does; it runs on its own goroutine, so it reports failures
// instead of failing the test.
func (a *agentClient) callFor(d time.Duration) modelCalls {
	tick := time.NewTicker(platformtest.IdleTimeout / 6)
	defer tick.Stop()
	c := modelCalls{first: time.Now()}
	for time.Since(c.first) < d {
		req, _ := http.NewRequest(http.MethodPost, a.egress+"/openai/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"go on"}]}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := a.http.Do(req)
		if err != nil {
			c.failed = err.Error()
			return c
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			c.failed = resp.Status
			return c
		}
		c.n, c.last = c.n+1, time.Now()
		<-tick.C
	}
	return c
}

// agentClient calls its node's egress listener from a sandbox pod's
// address, as the agent in the pod does.
type agentClient struct {
	http   *http.Client
	egress string
}

// agentOf is the agent of user's pod, once its node's egress listener
// knows the pod's address.
func (p *platform) agentOf(user string) *agentClient {
	p.t.Helper()
	pod, err := p.kube.CoreV1().Pods(p.ns).Get(p.t.Context(), p.sandboxOf(user), metav1.GetOptions{})
	if err != nil {
		p.t.Fatal(err)
	}
	n := p.nodes[p.podNode(user)]
	callers, err := n.idx.Callers()
	if err != nil {
		p.t.Fatal(err)
	}
	testkit.Eventually(p.t, n.name+" knows "+user+"'s pod address", func() bool {
		c, err := callers.ByIP(pod.Status.PodIP)
		return err == nil && c.User == user
	})
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(pod.Status.PodIP)}, Timeout: 5 * time.Second}
	return &agentClient{
		http:   &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}},
		egress: "http://" + n.egress,
	}
}

// busy declares the agent busy for d and returns the end the egress
// listener answered with.
func (a *agentClient) busy(t *testing.T, d time.Duration) time.Time {
	t.Helper()
	resp, err := a.http.Post(fmt.Sprintf("%s/_sandgate/busy?for=%ds", a.egress, int(d/time.Second)), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		BusyUntil time.Time `json:"busy_until"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); resp.StatusCode != http.StatusOK || err != nil {
		t.Fatalf("busy for %v = %s (%v)", d, resp.Status, err)
	}
	return answer.BusyUntil
}

// startProviderStandin serves a model provider's chat completions, with
// usage, on loopback, and returns EGRESS_PROVIDERS naming it and a keys
// directory holding its shared key.
func startProviderStandin(t *testing.T) (providers, keysDir string) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"standin","object":"chat.completion","choices":[],"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}}`)
	}))
	t.Cleanup(srv.Close)
	keysDir = t.TempDir()
	if err := os.WriteFile(filepath.Join(keysDir, "openai"), []byte("sk-standin\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`[{"name":"openai","base_url":%q}]`, srv.URL+"/v1"), keysDir
}
