package sweeper

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// Short timings for the integration tests.
const (
	itLease    = 3 * time.Second
	itRenew    = 2 * time.Second
	itRetry    = 500 * time.Millisecond
	itIdle     = 3 * time.Second
	itInterval = time.Second
)

// patchLog records every successful suspend patch of every replica.
type patchLog struct {
	mu      sync.Mutex
	patches []patchRecord
}

type patchRecord struct {
	replica, sandbox string
	at               time.Time
}

func (l *patchLog) of(sandbox string) []patchRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []patchRecord
	for _, p := range l.patches {
		if p.sandbox == sandbox {
			out = append(out, p)
		}
	}
	return out
}

// replica is one auth API replica: a Sweeper and a stand-in for the auth
// API's report endpoint, which observes or forwards once.
type replica struct {
	name      string
	sw        *Sweeper
	srv       *httptest.Server
	cut       atomic.Bool  // partitioned from the API server
	dead      atomic.Bool  // the Service no longer routes to it
	forwarded atomic.Int64 // reports passed on to the leader and taken

	cancel context.CancelFunc
	done   chan error
}

const forwardedHeader = "X-Sandgate-Forwarded"

func (r *replica) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	rep, err := activity.DecodeReport(req.Body)
	if err != nil {
		http.Error(w, "bad report", http.StatusBadRequest)
		return
	}
	err = r.sw.Observe(rep)
	if err == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	l, lerr := r.sw.Leader()
	if !errors.Is(err, ErrNotLeader) || lerr != nil || l.Self || req.Header.Get(forwardedHeader) != "" {
		http.Error(w, "no leader", http.StatusServiceUnavailable)
		return
	}
	body, _ := json.Marshal(rep)
	fwd, _ := http.NewRequestWithContext(req.Context(), http.MethodPost, "http://"+l.Addr+"/internal/activity", bytes.NewReader(body))
	fwd.Header.Set(forwardedHeader, "1")
	resp, err := http.DefaultClient.Do(fwd)
	if err != nil {
		http.Error(w, "forward failed", http.StatusServiceUnavailable)
		return
	}
	resp.Body.Close()
	if resp.StatusCode < 300 {
		r.forwarded.Add(1)
	}
	w.WriteHeader(resp.StatusCode)
}

// platform is the auth API side of a test: replicas sharing one Lease.
type platform struct {
	t        *testing.T
	e        *simtest.Env
	log      *patchLog
	replicas []*replica
	next     atomic.Uint64
}

func newPlatform(t *testing.T, e *simtest.Env, names ...string) *platform {
	p := &platform{t: t, e: e, log: &patchLog{}}
	for _, name := range names {
		p.replicas = append(p.replicas, p.start(name))
	}
	return p
}

func (p *platform) start(name string) *replica {
	t := p.t
	r := &replica{name: name, done: make(chan error, 1)}
	r.srv = httptest.NewUnstartedServer(r)
	cfg := rest.CopyConfig(testkit.ControlPlane(t).AdminConfig())
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if r.cut.Load() {
				return nil, errors.New("partitioned")
			}
			resp, err := rt.RoundTrip(req)
			if err == nil && req.Method == http.MethodPatch && resp.StatusCode < 300 && strings.Contains(req.URL.Path, "/sandboxes/") {
				p.log.mu.Lock()
				p.log.patches = append(p.log.patches, patchRecord{replica: name, sandbox: path.Base(req.URL.Path), at: time.Now()})
				p.log.mu.Unlock()
			}
			return resp, err
		})
	})
	core, sb := testkit.Clients(t, cfg)
	var err error
	r.sw, err = New(Options{
		Namespace: p.e.NS, Sandboxes: sb.Sandboxes(p.e.NS), Claims: sb.SandboxClaims(p.e.NS), Leases: core.CoordinationV1(),
		Identity:      Identity(name, r.srv.Listener.Addr().String()),
		LeaseDuration: itLease, RenewDeadline: itRenew, RetryPeriod: itRetry,
		IdleTimeout: itIdle, ReportInterval: itInterval, SweepInterval: 250 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil)).With("replica", name),
	})
	if err != nil {
		t.Fatal(err)
	}
	r.srv.Start()
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- r.sw.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop ends the replica gracefully (idempotent).
func (r *replica) stop(t *testing.T) {
	r.cancel()
	select {
	case err, ok := <-r.done:
		if ok {
			close(r.done)
			if err != nil {
				t.Errorf("%s: Run: %v", r.name, err)
			}
		}
	case <-time.After(testkit.Timeout):
		t.Errorf("%s: Run did not return", r.name)
	}
	r.srv.Close()
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// PostReport is the Service in front of the replicas: each report goes to
// the next live replica.
func (p *platform) PostReport(ctx context.Context, body []byte) (int, error) {
	for range len(p.replicas) {
		r := p.replicas[p.next.Add(1)%uint64(len(p.replicas))]
		if r.dead.Load() {
			continue
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+r.srv.Listener.Addr().String()+"/internal/activity", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	return 0, errors.New("no live replica")
}

// leader waits for exactly one replica to lead, and returns it.
func (p *platform) leader() *replica {
	var l *replica
	testkit.EventuallyNil(p.t, "one leader", func() error {
		l = nil
		n := 0
		for _, r := range p.replicas {
			if r.sw.Leading() {
				l, n = r, n+1
			}
		}
		if n != 1 {
			return fmt.Errorf("%d replicas lead", n)
		}
		return nil
	})
	return l
}

// laterSweep returns once the leader has finished every sweep begun before
// the call: it ends probe's last request through node and waits for probe's
// suspension, which only a sweep begun an idle timeout later can make.
func (p *platform) laterSweep(node *nodeProxy, probe activity.Key) {
	p.t.Helper()
	node.tr.End(probe)
	testkit.Eventually(p.t, "probe sandbox suspended by a later sweep", func() bool { return len(p.log.of(probe.Name)) > 0 })
}

// watchLeadership samples who leads until the test ends and fails the test
// if two replicas ever lead at once.
func (p *platform) watchLeadership() {
	go every(p.t.Context(), 2*time.Millisecond, func() bool {
		var leading []string
		for _, r := range p.replicas {
			if r.sw.Leading() {
				leading = append(leading, r.name)
			}
		}
		if len(leading) > 1 {
			p.t.Errorf("%v lead at once", leading)
			return false
		}
		return true
	})
}

// nodeProxy is one node's activity tracking and reporting.
type nodeProxy struct {
	tr *activity.Tracker
}

func (p *platform) nodeProxy(name string) *nodeProxy {
	t := p.t
	tr := activity.New(activity.Options{Quiet: itInterval})
	rep, err := activity.NewReporter(activity.ReporterOptions{
		Tracker: tr, Node: name, Sender: p, Interval: itInterval,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { rep.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return &nodeProxy{tr: tr}
}

// claim creates a claim, managed or hand-made, and returns its Sandbox's
// key once it is Ready.
func claim(e *simtest.Env, name string, managed bool) activity.Key {
	e.T.Helper()
	c := &extensions.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       extensions.SandboxClaimSpec{WarmPoolRef: extensions.WarmPoolRef{Name: simtest.PoolName}},
	}
	if managed {
		c.Labels = map[string]string{account.LabelManagedBy: account.ManagedByValue, account.LabelUser: strings.TrimPrefix(name, "dsh-")}
	}
	if _, err := e.SB.SandboxClaims(e.NS).Create(e.T.Context(), c, metav1.CreateOptions{}); err != nil {
		e.T.Fatal(err)
	}
	return activity.Key{Namespace: e.NS, Name: e.WaitClaimReady(name, testkit.Timeout).Status.Sandbox.Name}
}

func mode(e *simtest.Env, k activity.Key) agents.OperatingMode {
	sb, err := e.Sandbox(k.Name)
	if err != nil {
		e.T.Fatal(err)
	}
	return sb.Spec.OperatingMode
}

func TestIntegrationSuspendsIdleManagedSandbox(t *testing.T) {
	e := simtest.Start(t, testkit.ControlPlane(t), simtest.Options{Replicas: 4})
	idle, busy, hand := claim(e, "dsh-bob", true), claim(e, "dsh-carol", true), claim(e, "dsh-alice", false)
	probe := claim(e, "dsh-dave", true)
	p := newPlatform(t, e, "authapi-0", "authapi-1")
	p.watchLeadership()
	nodeA, nodeB := p.nodeProxy("node-a"), p.nodeProxy("node-b")
	p.leader()
	nodeA.tr.Begin(probe)

	// carol's agent holds a long request through node B; node A sees
	// nothing of it.
	nodeB.tr.Begin(busy)
	defer nodeB.tr.End(busy)
	// bob's last request went through node A.
	nodeA.tr.Begin(idle)
	last := time.UnixMilli(time.Now().UnixMilli()) // reports carry milliseconds
	nodeA.tr.End(idle)

	testkit.Eventually(t, "idle sandbox suspended", func() bool { return len(p.log.of(idle.Name)) > 0 })
	took := p.log.of(idle.Name)[0].at.Sub(last)
	t.Logf("idle sandbox suspended %v after its last request", took)
	if took < itIdle {
		t.Errorf("idle sandbox suspended %v after its last request, before the idle timeout %v", took, itIdle)
	}
	testkit.Eventually(t, "idle sandbox's mode Suspended", func() bool { return mode(e, idle) == agents.OperatingModeSuspended })
	p.laterSweep(nodeA, probe)
	for _, k := range []activity.Key{busy, hand} {
		if n := len(p.log.of(k.Name)); n != 0 || mode(e, k) != agents.OperatingModeRunning {
			t.Errorf("%s: %d suspend patches, mode %s; want untouched", k.Name, n, mode(e, k))
		}
	}
	if n := len(p.log.of(idle.Name)); n != 1 {
		t.Errorf("idle sandbox patched %d times", n)
	}
	// The Service spreads reports over both replicas: the follower passed
	// its share on to the leader.
	var forwarded int64
	for _, r := range p.replicas {
		forwarded += r.forwarded.Load()
	}
	if forwarded == 0 {
		t.Error("no report was forwarded to the leader")
	}
}

func TestIntegrationHandover(t *testing.T) {
	for _, tt := range []struct {
		name string
		kill func(*replica)
	}{
		// Graceful shutdown: the context ends and the lease is released.
		{"release", func(r *replica) { r.dead.Store(true); r.cancel() }},
		// SIGKILL as the cluster sees it: no release, no renewals, no
		// traffic; the lease has to expire.
		{"kill", func(r *replica) { r.dead.Store(true); r.cut.Store(true) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := simtest.Start(t, testkit.ControlPlane(t), simtest.Options{Replicas: 3})
			idle, busy := claim(e, "dsh-bob", true), claim(e, "dsh-carol", true)
			probe := claim(e, "dsh-dave", true)
			p := newPlatform(t, e, "authapi-0", "authapi-1")
			p.watchLeadership()
			nodeA, nodeB := p.nodeProxy("node-a"), p.nodeProxy("node-b")
			old := p.leader()

			nodeB.tr.Begin(busy) // busy through node B for the whole test
			defer nodeB.tr.End(busy)
			nodeB.tr.Begin(probe)
			// bob's last request ends as the leader dies: only the new
			// leader can find his sandbox idle.
			nodeA.tr.Begin(idle)
			killed := time.Now()
			tt.kill(old)
			nodeA.tr.End(idle)

			var next *replica
			testkit.Eventually(t, "a new leader", func() bool {
				for _, r := range p.replicas {
					if r != old && r.sw.Leading() {
						next = r
						return true
					}
				}
				return false
			})
			t.Logf("%s took over %v after the %s", next.name, time.Since(killed), tt.name)

			// The new leader waits IDLE_TIMEOUT before it suspends bob's
			// sandbox, and never suspends carol's.
			testkit.Eventually(t, "idle sandbox suspended after the handover", func() bool { return len(p.log.of(idle.Name)) > 0 })
			p.laterSweep(nodeB, probe)
			if ps := p.log.of(idle.Name); len(ps) != 1 || ps[0].replica != next.name {
				t.Errorf("idle sandbox patches %+v, want one by %s", ps, next.name)
			}
			if ps := p.log.of(busy.Name); len(ps) != 0 {
				t.Errorf("busy sandbox patched: %+v", ps)
			}
		})
	}
}
