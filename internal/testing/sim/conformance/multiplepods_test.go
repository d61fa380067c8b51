package conformance_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
)

// Contract, annotation agents.x-k8s.io/pod-name: "The authoritative link in
// every version is the pod's controller ownerReference to the Sandbox (PR
// 1337, v0.5.6: a Sandbox with more than one owned pod is Ready=False,
// reason MultiplePods)". Upstream controllers/sandbox_controller.go
// reconcilePod refuses to choose, create or delete a pod then, and
// reconcileChildResources clears podIPs and nodeName.
func TestMultiplePods(t *testing.T) {
	forEachRelease(t, func(t *testing.T, r controller.Release) {
		b := startBare(t, r)
		const name = "twins"
		sb := b.createSandbox(name, false)
		first := b.startPod(name, "", "10.244.6.1")
		b.waitSandbox(name, "Ready", cond(agents.ConditionReady, "True/DependenciesReady"), podFields("10.244.6.1"))

		second := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name:   name + "-second",
				Labels: map[string]string{agents.LabelSandboxNameHash: fnv32a(name)},
				OwnerReferences: []metav1.OwnerReference{{
					APIVersion: agents.GroupVersion.String(), Kind: "Sandbox", Name: name, UID: sb.UID,
					Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
				}},
			},
			Spec: *first.Spec.DeepCopy(),
		}
		second.Spec.NodeName = ""
		if _, err := b.kube.CoreV1().Pods(b.ns).Create(t.Context(), second, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		b.waitSandbox(name, "two owned pods", cond(agents.ConditionReady, "False/MultiplePods"), podFields(""))
		for _, n := range []string{name, second.Name} {
			if p, err := b.pod(n); err != nil || p.DeletionTimestamp != nil {
				t.Errorf("pod %s was touched: %v %+v", n, err, p)
			}
		}

		if err := b.kube.CoreV1().Pods(b.ns).Delete(t.Context(), second.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		b.waitSandbox(name, "one pod again", cond(agents.ConditionReady, "True/DependenciesReady"), podFields("10.244.6.1"))
	})
}
