package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/accountpath/authapi"
	"github.com/sandgate/sandgate/internal/accountpath/sweeper"
	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// childEnv makes the test binary run as the authapi command (see
// TestMain), so the test can SIGKILL a real replica process.
const childEnv = "SANDGATE_TEST_RUN_AUTHAPI"

// Timings of the leader test: the lease expires 3 s after the last renewal.
const (
	ltLease    = 3 * time.Second
	ltRetry    = 500 * time.Millisecond
	ltIdle     = 4 * time.Second
	ltInterval = time.Second
)

// replicaProc is one auth API replica running as a child process.
type replicaProc struct {
	pod, url string
	proc     *controlplane.Process
}

// TestLeaderKilled SIGKILLs the leading auth API replica (a real process)
// and checks the rules: the other replica leads within the lease
// duration, the sandbox that node proxies report busy is never suspended,
// and the idle one is suspended exactly once, by the new leader.
func TestLeaderKilled(t *testing.T) {
	cp := testkit.ControlPlane(t)
	e := simtest.Start(t, cp, simtest.Options{Replicas: 2})
	idle, busy := managedClaim(e, "bob"), managedClaim(e, "carol")
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := controlplane.WriteKubeconfig(cp.AdminConfig(), kubeconfig); err != nil {
		t.Fatal(err)
	}
	token, err := cp.ServiceAccountToken(t.Context(), e.NS, "nodeproxy", 3600, authapi.DefaultInternalAudience)
	if err != nil {
		t.Fatal(err)
	}
	var reps []*replicaProc
	for i := range 2 {
		reps = append(reps, startReplica(t, dir, kubeconfig, e.NS, i))
	}

	// The node proxies' reports, through a Service that skips dead
	// replicas: node-a sees bob active until the leader is killed, then
	// never again; node-b has carol's request in flight.
	var bobLast atomic.Int64 // bob's last activity once frozen, 0 until then
	report := func(node string, entries ...activity.Entry) {
		body, _ := json.Marshal(activity.Report{Node: node, SentAt: time.Now().UnixMilli(), Entries: entries})
		for _, r := range reps {
			if r.proc.Exited() {
				continue
			}
			req, _ := http.NewRequest(http.MethodPost, r.url+"/internal/v1/activity", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode < 300 {
					return
				}
			}
		}
	}
	ctx, stopReports := context.WithCancel(t.Context())
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		tick := time.NewTicker(ltInterval)
		defer tick.Stop()
		for {
			now := time.Now().UnixMilli()
			last := bobLast.Load()
			if last == 0 {
				last = now
			}
			report("node-a", activity.Entry{Namespace: e.NS, Sandbox: idle, LastActivity: last})
			report("node-b", activity.Entry{Namespace: e.NS, Sandbox: busy, LastActivity: now, InFlight: 1})
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	defer func() { stopReports(); <-reported; http.DefaultClient.CloseIdleConnections() }()

	leader, _ := awaitLeader(e, reps, nil)
	// The leader saw bob active at most one report interval ago, so it
	// has ltIdle - ltInterval left before bob is due: it dies first.
	lease, err := e.Core.CoordinationV1().Leases(e.NS).Get(t.Context(), sweeper.DefaultLeaseName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bobLast.Store(time.Now().UnixMilli())
	if err := syscall.Kill(leader.proc.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.Receive(t, leader.pod+"'s exit", leader.proc.Done())

	next, taken := awaitLeader(e, reps, leader)
	// Measured by the replicas' own clocks on the Lease: the old leader's
	// last renewal, the new one's acquisition.
	if lease.Spec.RenewTime == nil || taken.Spec.AcquireTime == nil {
		t.Fatalf("Lease without renew or acquire time: %+v, then %+v", lease.Spec, taken.Spec)
	}
	took := taken.Spec.AcquireTime.Sub(lease.Spec.RenewTime.Time)
	t.Logf("%s leads %v after %s last renewed (lease %v)", next.pod, took.Round(time.Millisecond), leader.pod, ltLease)
	const slack = 2 * time.Second // timers run late on a loaded 2-core machine
	if took > ltLease+2*ltRetry+slack {
		t.Errorf("handover took %v, longer than the lease duration (+ two retry periods and scheduling slack)", took)
	}

	testkit.Eventually(t, "idle sandbox suspended after the handover", func() bool {
		sb, err := e.Sandbox(idle)
		return err == nil && sb.Spec.OperatingMode == agents.OperatingModeSuspended
	})
	staysAwake(e, busy, ltIdle)
	patches := map[string][]string{}
	for _, r := range reps {
		data, err := os.ReadFile(r.proc.LogPath())
		if err != nil {
			t.Fatal(err)
		}
		for l := range strings.Lines(string(data)) {
			var rec struct{ Msg, Sandbox string }
			if json.Unmarshal([]byte(l), &rec) == nil && rec.Msg == "suspended idle sandbox" {
				patches[rec.Sandbox] = append(patches[rec.Sandbox], r.pod)
			}
		}
	}
	if got := patches[idle]; len(got) != 1 || got[0] != next.pod {
		t.Errorf("idle sandbox suspended by %v, want once by %s", got, next.pod)
	}
	if got := patches[busy]; len(got) != 0 {
		t.Errorf("busy sandbox suspended by %v", got)
	}
}

// awaitLeader watches the sweeper's Lease until a live replica other than
// not holds it, and returns that replica and the Lease as it saw it.
func awaitLeader(e *simtest.Env, reps []*replicaProc, not *replicaProc) (*replicaProc, *coordinationv1.Lease) {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(e.T.Context(), testkit.Timeout)
	defer cancel()
	var holder *replicaProc
	lw := cache.NewListWatchFromClient(e.Core.CoordinationV1().RESTClient(), "leases", e.NS,
		fields.OneTermEqualSelector("metadata.name", sweeper.DefaultLeaseName))
	ev, err := watchtools.UntilWithSync(ctx, lw, &coordinationv1.Lease{}, nil, func(ev watch.Event) (bool, error) {
		l, ok := ev.Object.(*coordinationv1.Lease)
		holder = nil
		if ok {
			holder = leaseHolder(l, reps)
		}
		return holder != nil && holder != not, nil
	})
	if err != nil {
		e.T.Fatalf("waiting for a leader other than %v: %v", not, err)
	}
	return holder, ev.Object.(*coordinationv1.Lease)
}

// staysAwake fails the test if Sandbox name is suspended within d. It
// watches, so a suspension fails the test at once.
func staysAwake(e *simtest.Env, name string, d time.Duration) {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(e.T.Context(), d)
	defer cancel()
	w, err := e.SB.Sandboxes(e.NS).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		e.T.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if sb, ok := ev.Object.(*agents.Sandbox); ok && sb.Spec.OperatingMode == agents.OperatingModeSuspended {
			e.T.Errorf("busy sandbox %s suspended", name)
			return
		}
	}
}

// managedClaim creates user's claim as the auth API labels it and returns
// the name of the Sandbox it adopted.
func managedClaim(e *simtest.Env, user string) string {
	e.T.Helper()
	c := &extensions.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "dsh-" + user, Labels: map[string]string{account.LabelManagedBy: account.ManagedByValue, account.LabelUser: user}},
		Spec:       extensions.SandboxClaimSpec{WarmPoolRef: extensions.WarmPoolRef{Name: simtest.PoolName}},
	}
	if _, err := e.SB.SandboxClaims(e.NS).Create(e.T.Context(), c, metav1.CreateOptions{}); err != nil {
		e.T.Fatal(err)
	}
	return e.WaitClaimReady(c.Name, 30*time.Second).Status.Sandbox.Name
}

// startReplica starts auth API replica i as a child process with the
// test's short idle and lease timings and waits until it is ready.
func startReplica(t *testing.T, dir, kubeconfig, ns string, i int) *replicaProc {
	t.Helper()
	listen, ops := testkit.FreeAddr(t), testkit.FreeAddr(t)
	r := &replicaProc{pod: fmt.Sprintf("authapi-%d", i), url: "http://" + listen}
	env := []string{
		childEnv + "=1", "KUBECONFIG=" + kubeconfig, "NAMESPACE=" + ns,
		"LISTEN_ADDR=" + listen, "OPS_ADDR=" + ops, "POD_NAME=" + r.pod, "POD_IP=127.0.0.1",
		"COOKIE_SECURE=false", "ALLOW_INSECURE_COOKIES=1",
		"INTERNAL_ALLOWED_SERVICE_ACCOUNTS=system:serviceaccount:" + ns + ":nodeproxy",
		"TOKEN_REVIEW_CACHE_TTL=1s",
		"IDLE_TIMEOUT=" + ltIdle.String(), "REPORT_INTERVAL=" + ltInterval.String(),
		"LEADER_LEASE_DURATION=" + ltLease.String(), "LEADER_RENEW_DEADLINE=2s", "LEADER_RETRY_PERIOD=" + ltRetry.String(),
	}
	p, err := controlplane.StartProcess(r.pod, dir, os.Args[0], env)
	if err != nil {
		t.Fatal(err)
	}
	r.proc = p
	t.Cleanup(func() {
		if err := p.Stop(10 * time.Second); err != nil {
			t.Errorf("stop %s: %v", r.pod, err)
		}
	})
	ready := testkit.Poll(t.Context(), testkit.Timeout, func() bool {
		return p.Exited() || testkit.Status("http://"+ops+"/readyz") == http.StatusOK
	})
	if !ready || p.Exited() {
		t.Fatalf("%s not ready:\n%s", r.pod, p.LogTail())
	}
	return r
}

// leaseHolder is the live replica l names as its holder, or nil.
func leaseHolder(l *coordinationv1.Lease, reps []*replicaProc) *replicaProc {
	if l.Spec.HolderIdentity == nil {
		return nil
	}
	for _, r := range reps {
		if strings.HasPrefix(*l.Spec.HolderIdentity, r.pod+"_") && !r.proc.Exited() {
			return r
		}
	}
	return nil
}
