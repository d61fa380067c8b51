package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/authapi"
	"github.com/sandgate/sandgate/internal/controlplane"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/sim/simtest"
	"github.com/sandgate/sandgate/internal/sweeper"
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

// runChild runs the authapi command when the test binary was started as a
// replica by TestLeaderKilled, and reports whether it did.
func runChild() (int, bool) {
	if os.Getenv(childEnv) != "1" {
		return 0, false
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return run(ctx, nil, os.Getenv, os.Stdin, os.Stdout, os.Stderr), true
}

// replicaProc is one auth API replica running as a child process.
type replicaProc struct {
	pod, url string
	proc     *controlplane.Process
}

// TestLeaderKilled SIGKILLs the leading auth API replica (a real process)
// just before an idle sandbox is due and checks the rules: the
// other replica leads within the lease duration, the sandbox that node
// proxies report busy is never suspended, and the idle one is suspended
// exactly once, by the new leader.
func TestLeaderKilled(t *testing.T) {
	e := simtest.Start(t, cluster, simtest.Options{Replicas: 2})
	idle, busy := managedClaim(e, "bob"), managedClaim(e, "carol")
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := controlplane.WriteKubeconfig(cluster.AdminConfig(), kubeconfig); err != nil {
		t.Fatal(err)
	}
	token, err := cluster.ServiceAccountToken(t.Context(), e.NS, "nodeproxy", 3600, authapi.DefaultInternalAudience)
	if err != nil {
		t.Fatal(err)
	}
	var reps []*replicaProc
	for i := range 2 {
		reps = append(reps, startReplica(t, dir, kubeconfig, e.NS, i))
	}

	// The node proxies' reports, through a Service that skips dead
	// replicas: node-a saw bob once, node-b has carol's request in flight.
	touched := time.Now().UnixMilli()
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
			report("node-a", activity.Entry{Namespace: e.NS, Sandbox: idle, LastActivity: touched})
			report("node-b", activity.Entry{Namespace: e.NS, Sandbox: busy, LastActivity: now, InFlight: 1})
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	defer func() { stopReports(); <-reported; http.DefaultClient.CloseIdleConnections() }()

	var leader *replicaProc
	e.Eventually(20*time.Second, func() string {
		if leader = leaseHolder(e, reps); leader == nil {
			return "no leader"
		}
		return ""
	})
	// Kill it just before bob's sandbox is due (the first term started
	// its idle clock no earlier than when it saw the sandbox).
	time.Sleep(time.Until(time.UnixMilli(touched).Add(ltIdle - 500*time.Millisecond)))
	if err := syscall.Kill(leader.proc.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-leader.proc.Done()

	var next *replicaProc
	const slack = 2 * time.Second // timers run late on a loaded 2-core machine
	e.Eventually(ltLease+2*ltRetry+slack+time.Second, func() string {
		if next = leaseHolder(e, reps); next == nil || next == leader {
			return "no new leader"
		}
		return ""
	})
	took := time.Since(killed)
	t.Logf("%s leads %v after %s was killed (lease %v)", next.pod, took.Round(time.Millisecond), leader.pod, ltLease)
	if took > ltLease+2*ltRetry+slack {
		t.Errorf("handover took %v, longer than the lease duration (+ two retry periods and scheduling slack)", took)
	}

	e.Eventually(ltIdle+3*ltInterval+10*time.Second, func() string {
		if sb, err := e.Sandbox(idle); err != nil || sb.Spec.OperatingMode != agents.OperatingModeSuspended {
			return "idle sandbox not suspended after the handover"
		}
		return ""
	})
	time.Sleep(ltIdle)
	if sb, err := e.Sandbox(busy); err != nil || sb.Spec.OperatingMode == agents.OperatingModeSuspended {
		t.Errorf("busy sandbox suspended (or gone: %v)", err)
	}
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
	listen, ops := freePort(t), freePort(t)
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
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + ops + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r
			}
		}
		if time.Now().After(deadline) || p.Exited() {
			t.Fatalf("%s not ready:\n%s", r.pod, p.LogTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// leaseHolder is the replica the sweeper's Lease names, or nil.
func leaseHolder(e *simtest.Env, reps []*replicaProc) *replicaProc {
	l, err := e.Core.CoordinationV1().Leases(e.NS).Get(e.T.Context(), sweeper.DefaultLeaseName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return nil
	}
	for _, r := range reps {
		if strings.HasPrefix(*l.Spec.HolderIdentity, r.pod+"_") && !r.proc.Exited() {
			return r
		}
	}
	return nil
}
