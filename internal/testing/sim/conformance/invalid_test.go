package conformance_test

import (
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// Contract, condition Ready, reason InvalidConfiguration (v1.0.4+): "a
// permanent rejection by the API server, e.g. a derived Service name over
// 63 characters; the controller does not retry it: terminal". The headless
// Service takes the Sandbox's name (upstream controllers/sandbox_controller.go
// reconcileService), which must be a DNS-1035 label where a Sandbox's name
// need only be a DNS subdomain: a dot, or more than 63 characters, makes
// the Service invalid. v0.5.6 reports such an error as any other
// (computeReadyCondition: ReconcilerError, "Error seen: ...") and retries
// with backoff. A changed spec ends the verdict in both.
func TestInvalidConfiguration(t *testing.T) {
	names := map[string]string{
		// v1.0.6's CEL rule checks only the length, so a dot reaches the
		// controller at every release.
		"dotted":        "conformance.invalid",
		"64 characters": "c" + strings.Repeat("o", 63),
	}
	for what, name := range names {
		t.Run(what, func(t *testing.T) {
			forEachRelease(t, func(t *testing.T, r controller.Release) { testInvalidConfiguration(t, r, name) })
		})
	}
}

func testInvalidConfiguration(t *testing.T, r controller.Release, name string) {
	b := startBare(t, r)
	_, err := b.sb.Sandboxes(b.ns).Create(t.Context(), &agents.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec(true)}, metav1.CreateOptions{})
	if apierrors.IsInvalid(err) {
		t.Skipf("the installed CRDs reject the Sandbox itself (v1.0.6's CEL rule): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	rejected := fmt.Sprintf("Service %q is invalid", name)
	if r == controller.ReleaseV05 {
		b.waitSandbox(name, "reported and retried", cond(agents.ConditionReady, "False/ReconcilerError"), message("Error seen: ", rejected))
		testkit.Eventually(t, "the Service retried", func() bool { return b.servicePosts.Load() >= 3 })
	} else {
		b.waitSandbox(name, "reported once", cond(agents.ConditionReady, "False/InvalidConfiguration"), message("", rejected))
		// The status write and a metadata change both reconcile the
		// Sandbox again; a second Sandbox brought to Ready afterwards marks
		// that those passes are over.
		patch := `{"metadata":{"labels":{"conformance.sandgate.dev/poke":"1"}}}`
		if _, err := b.sb.Sandboxes(b.ns).Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		b.createSandbox("marker", false)
		b.startPod("marker", "", "10.244.7.9")
		b.waitSandbox("marker", "Ready", cond(agents.ConditionReady, "True/DependenciesReady"))
		if n := b.servicePosts.Load(); n != 1 {
			t.Errorf("%d Service creations, want 1: the rejection was retried", n)
		}
		b.waitSandbox(name, "still invalid", cond(agents.ConditionReady, "False/InvalidConfiguration"))
	}
	// Its pod does not depend on the Service (reconcilePod runs first).
	b.waitPod(name, "")

	// A changed spec is tried again: without a Service it is valid.
	if _, err := b.sb.Sandboxes(b.ns).Patch(t.Context(), name, types.MergePatchType, []byte(`{"spec":{"service":false}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	b.startPod(name, "", "10.244.7.1")
	b.waitSandbox(name, "valid once the spec changed", cond(agents.ConditionReady, "True/DependenciesReady"))
}

// message checks that the Ready condition's message starts with prefix
// and contains part.
func message(prefix, part string) func(*agents.Sandbox) error {
	return func(sb *agents.Sandbox) error {
		if m := findCond(sb, agents.ConditionReady).Message; !strings.HasPrefix(m, prefix) || !strings.Contains(m, part) {
			return fmt.Errorf("Ready message %q, want %q...%q", m, prefix, part)
		}
		return nil
	}
}
