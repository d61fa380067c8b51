package conformance_test

import (
	"fmt"
	"hash/fnv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
)

// fnv32a is the contract's hash, computed here rather than by the
// stand-in: lower-case hex of FNV-32a, eight digits (upstream
// controllers/sandbox_controller.go NameHash).
func fnv32a(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	return fmt.Sprintf("%08x", h.Sum32())
}

// controlledBy checks that obj's controller ownerReference is kind/uid.
func controlledBy(obj metav1.Object, kind string, uid types.UID) error {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.Kind != kind || ref.UID != uid {
		return fmt.Errorf("%s's controller %+v, want %s %s", obj.GetName(), ref, kind, uid)
	}
	return nil
}

// Contract, "Labels the controller sets": the pod label
// agents.x-k8s.io/sandbox-name-hash is the FNV-32a hex of the Sandbox
// name and the headless Service's selector; "Behaviour": the pod has the
// Sandbox's name; "Every pod has a controller ownerReference to its
// Sandbox"; status.selector, status.service and status.serviceFQDN.
// Volume claims are named <template>-<sandbox> (upstream
// controllers/sandbox_controller.go reconcilePVCs).
func TestNamesAndLabels(t *testing.T) {
	forEachRelease(t, func(t *testing.T, r controller.Release) {
		b := startBare(t, r)
		const name = "names"
		sb := b.createSandbox(name, true)
		hash := fnv32a(name)
		b.startPod(name, "", "10.244.1.1")
		b.waitSandbox(name, "Ready with its Service", cond(agents.ConditionReady, "True/DependenciesReady"),
			func(got *agents.Sandbox) error {
				st := got.Status
				if st.Selector != agents.LabelSandboxNameHash+"="+hash || st.Service != name ||
					st.ServiceFQDN != name+"."+b.ns+".svc.cluster.local" {
					return fmt.Errorf("status selector %q service %q serviceFQDN %q", st.Selector, st.Service, st.ServiceFQDN)
				}
				return nil
			})

		pod, err := b.pod(name)
		if err != nil {
			t.Fatal(err)
		}
		if pod.Labels[agents.LabelSandboxNameHash] != hash {
			t.Errorf("pod labels %v, want %s=%s", pod.Labels, agents.LabelSandboxNameHash, hash)
		}
		if err := controlledBy(pod, "Sandbox", sb.UID); err != nil {
			t.Error(err)
		}
		svc, err := b.kube.CoreV1().Services(b.ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if svc.Spec.ClusterIP != corev1.ClusterIPNone || len(svc.Spec.Selector) != 1 || svc.Spec.Selector[agents.LabelSandboxNameHash] != hash {
			t.Errorf("service clusterIP %q selector %v, want headless on the hash label", svc.Spec.ClusterIP, svc.Spec.Selector)
		}
		if err := controlledBy(svc, "Sandbox", sb.UID); err != nil {
			t.Error(err)
		}
		pvc, err := b.kube.CoreV1().PersistentVolumeClaims(b.ns).Get(t.Context(), "home-"+name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := controlledBy(pvc, "Sandbox", sb.UID); err != nil {
			t.Error(err)
		}
		if !mountsClaim(pod, "home", pvc.Name) {
			t.Errorf("pod volumes %+v do not mount %s as home", pod.Spec.Volumes, pvc.Name)
		}
	})
}

func mountsClaim(pod *corev1.Pod, volume, claim string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Name == volume && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim {
			return true
		}
	}
	return false
}

// Contract, annotation agents.x-k8s.io/pod-name: v0.5.x writes the
// current pod's name and clears it once the pod is gone; from v1.0 (PR
// 1417) the controller no longer writes it, and still reads an old value
// until it is cleared (upstream controllers/sandbox_controller.go
// reconcilePod and clearPodNameAnnotation: a value that names no owned pod
// is cleared).
func TestPodNameAnnotation(t *testing.T) {
	forEachRelease(t, func(t *testing.T, r controller.Release) {
		b := startBare(t, r)
		const name = "annotated"
		_, err := b.sb.Sandboxes(b.ns).Create(t.Context(), &agents.Sandbox{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{agents.AnnotationPodName: "gone-pod"}},
			Spec:       spec(false),
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := "" // v1.0: never written; the stale value is cleared
		if r == controller.ReleaseV05 {
			want = name
		}
		b.startPod(name, "", "10.244.1.2")
		b.waitSandbox(name, "Ready, pod-name "+want, cond(agents.ConditionReady, "True/DependenciesReady"), podNameIs(want))

		b.setMode(name, agents.OperatingModeSuspended)
		b.waitSandbox(name, "pod deleted", cond(agents.ConditionSuspended, "False/PodTerminating"), podNameIs(want))
		b.finishDeletion(name)
		b.waitSandbox(name, "no pod-name once the pod is gone", cond(agents.ConditionSuspended, "True/PodTerminated"), podNameIs(""))
	})
}

func podNameIs(want string) func(*agents.Sandbox) error {
	return func(sb *agents.Sandbox) error {
		got, ok := sb.Annotations[agents.AnnotationPodName]
		if got != want || want == "" && ok {
			return fmt.Errorf("pod-name annotation %q (present %v), want %q", got, ok, want)
		}
		return nil
	}
}
