package clusterjourney

import (
	"net/http"
	"strings"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/clusterinstall"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// sandboxMode is the Sandbox's operatingMode ("" counts as Running).
func (j *journey) sandboxMode(a account) string {
	mode, err := j.kubectl("-n", clusterinstall.SandboxNamespace, "get", "sandbox", a.sandbox, "-o", "jsonpath={.spec.operatingMode}")
	if err != nil {
		j.t.Fatalf("read the sandbox's mode: %v %s", err, mode)
	}
	return mode
}

// waitSuspended waits until a's Sandbox is suspended, its pod (named
// after it) is gone and the pod-name annotation, which v0.5.6 writes, is
// cleared.
func (j *journey) waitSuspended(a account, timeout time.Duration) {
	j.t.Helper()
	testkit.Within(j.t, timeout, "the sandbox suspended and its pod gone", func() bool {
		if j.sandboxMode(a) != "Suspended" {
			return false
		}
		pod, err := j.kubectl("-n", clusterinstall.SandboxNamespace, "get", "pod", a.sandbox, "--ignore-not-found", "-o", "name")
		return err == nil && pod == "" && j.podNameAnnotation(a.sandbox) == ""
	})
}

// leaderKilledWhileActive keeps a busy through node i for longer than the
// idle timeout while the auth API replica that holds the lease is deleted,
// and fails if the sandbox is suspended meanwhile or no other replica
// takes the lease.
func (j *journey) leaderKilledWhileActive(a account, i int) {
	j.t.Helper()
	lease := func() string {
		h, _ := j.kubectl("-n", clusterinstall.SandboxNamespace, "get", "lease", "sandgate-authapi-leader", "-o", "jsonpath={.spec.holderIdentity}")
		return h
	}
	leader := lease()
	if leader == "" {
		j.t.Fatalf("no auth API replica holds the lease")
	}
	// The holder identity is <pod name>_<pod address>.
	pod, _, _ := strings.Cut(leader, "_")
	end := time.Now().Add(idleTimeout + 4*reportInterval)
	deleted := false
	for time.Now().Before(end) {
		resp, body := j.do(i, http.MethodGet, "/u/alice/api/messages", "", a.api(j, i, ""))
		j.expect(resp, body, http.StatusOK, "a request while the leader changes")
		if mode := j.sandboxMode(a); mode == "Suspended" {
			j.t.Fatalf("the sandbox was suspended while in use (leader %s deleted: %v)", leader, deleted)
		}
		if !deleted && time.Until(end) < idleTimeout/2+4*reportInterval {
			if out, err := j.kubectl("-n", clusterinstall.SandboxNamespace, "delete", "pod", pod, "--wait=false"); err != nil {
				j.t.Fatalf("delete the leader %s: %v %s", pod, err, out)
			}
			deleted = true
			j.t.Logf("deleted the leading auth API pod %s", pod)
		}
		time.Sleep(reportInterval)
	}
	testkit.Within(j.t, 2*time.Minute, "another replica holding the lease", func() bool {
		h := lease()
		return h != "" && h != leader
	})
	j.t.Logf("lease moved from %s to %s", leader, lease())
}

// waitGone waits until the claim, its Sandbox and its volume claims are
// gone: the garbage collector follows the ownerReferences.
func (j *journey) waitGone(a account) {
	j.t.Helper()
	testkit.Within(j.t, 3*time.Minute, "claim, Sandbox and PVC removed", func() bool {
		out, _ := j.kubectl("-n", clusterinstall.SandboxNamespace, "get", "sandboxclaims,sandboxes,pvc", "-o", "name")
		return !strings.Contains(out, "dsh-"+a.user) && !strings.Contains(out, a.sandbox)
	})
}
