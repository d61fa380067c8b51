package nodeproxy_test

import (
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestE2EStoppedPodIsRecreated evicts a user's pod on the simulated
// cluster, as node pressure or a reclaimed spot node would: the node
// proxies answer 503 with Retry-After meanwhile (a 502 only in the moment
// between the app's death and the informers seeing it; never a 401 or a
// hang), the auth API's leader deletes the failed pod, the controller
// creates a new one, and the agent is served again without signing in.
func TestE2EStoppedPodIsRecreated(t *testing.T) {
	p := startPlatformWith(t, platformOptions{Idle: true})
	a := p.signup(0, "erin")
	pods := p.kube.CoreV1().Pods(p.ns)
	old, err := pods.Get(t.Context(), p.sandboxOf("erin"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.sim.Cluster.Kubelet.EvictPod(p.ns, old.Name); err != nil {
		t.Fatal(err)
	}
	stopped := 0
	testkit.Eventually(t, "erin's agent served by a new pod", func() bool {
		resp := p.get(0, "/u/erin/api/echo", map[string]string{"Cookie": cookie(a.session)})
		body := readAll(t, resp)
		switch {
		case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
			if strings.Contains(body, "pod stopped") {
				stopped++
			}
			return false
		case resp.StatusCode == http.StatusBadGateway && stopped == 0:
			return false
		case resp.StatusCode != http.StatusOK:
			t.Fatalf("while the pod was replaced: %d %q, want 200, or 503 with Retry-After", resp.StatusCode, body)
		}
		cur, err := pods.Get(t.Context(), old.Name, metav1.GetOptions{})
		return err == nil && cur.UID != old.UID
	})
	t.Logf("%d answers named the stopped pod before the new one served", stopped)
}
