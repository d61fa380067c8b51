package manifests_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// noProviderKeysPolicy is the hardening Component's admission policy.
const noProviderKeysPolicy = "sandgate-no-provider-keys-in-sandboxes"

// hardened renders the base with the hardening Component.
func hardened(t *testing.T) rendered {
	t.Helper()
	c := combination{name: "base+" + hardeningComponent, components: []string{hardeningComponent}}
	renderCombination(t, c)
	return renderVariant(t, "combination "+c.name)
}

// sandboxWorkload is the rendered sandbox template's pod.
func sandboxWorkload(t *testing.T, r rendered) workload {
	t.Helper()
	for _, w := range r.workloads {
		if w.kind == "SandboxTemplate" {
			return w
		}
	}
	t.Fatal("no sandbox template")
	return workload{}
}

// TestHardeningPlacesSandboxes: the hardened template runs in gVisor
// through a RuntimeClass the Component ships, selects the dedicated nodes
// and tolerates their taint, and the default deny covers sandboxes but
// neither the auth API nor oauth2-proxy.
func TestHardeningPlacesSandboxes(t *testing.T) {
	r := hardened(t)
	spec := sandboxWorkload(t, r).spec
	if spec.RuntimeClassName == nil || *spec.RuntimeClassName != "gvisor" {
		t.Fatalf("sandboxes run with runtime class %v, want gvisor", spec.RuntimeClassName)
	}
	rc := decodeKind[nodev1.RuntimeClass](t, build(t, "combination base+"+hardeningComponent), "RuntimeClass", "gvisor")
	if rc.Handler != "runsc" || rc.Scheduling == nil || len(rc.Scheduling.NodeSelector) == 0 {
		t.Errorf("RuntimeClass gvisor: handler %q, scheduling %+v; want runsc, only on labelled nodes", rc.Handler, rc.Scheduling)
	}
	for key, value := range spec.NodeSelector {
		tolerated := slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool {
			return tol.Key == key && tol.Value == value && tol.Effect == corev1.TaintEffectNoSchedule
		})
		if !tolerated {
			t.Errorf("sandboxes select nodes %s=%s but do not tolerate their NoSchedule taint", key, value)
		}
	}
	if len(spec.NodeSelector) == 0 {
		t.Error("sandboxes select no dedicated nodes")
	}
	deny := slices.IndexFunc(r.policies, func(p networkingv1.NetworkPolicy) bool { return p.Name == "sandgate-default-deny" })
	if deny < 0 {
		t.Fatal("no sandgate-default-deny policy")
	}
	sel, err := metav1.LabelSelectorAsSelector(&r.policies[deny].Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"dsh-web": true, "sandgate-authapi": false, "oauth2-proxy": false} {
		if got := sel.Matches(labels.Set{"app.kubernetes.io/name": name}); got != want {
			t.Errorf("the default deny selects %s: %v, want %v", name, got, want)
		}
	}
}

// TestHardeningKeepsProviderKeysOutOfSandboxes applies the Component's
// admission policy to the real API server: a pod in the sandbox namespace
// that takes a provider-key Secret as environment or volume is refused;
// the hardened sandbox template's pod is admitted.
func TestHardeningKeepsProviderKeysOutOfSandboxes(t *testing.T) {
	a := newApplier(t)
	objs := build(t, "combination base+"+hardeningComponent)
	for _, obj := range objs {
		switch {
		case obj.GetKind() == "Namespace", obj.GetKind() == "RuntimeClass", obj.GetName() == noProviderKeysPolicy:
			if err := a.apply(t, obj, false); err != nil {
				t.Fatalf("apply %s %s: %v", obj.GetKind(), obj.GetName(), err)
			}
		}
	}
	cs, err := kubernetes.NewForConfig(testkit.ControlPlane(t).AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ar := cs.AdmissionregistrationV1()
		_ = ar.ValidatingAdmissionPolicyBindings().Delete(context.Background(), noProviderKeysPolicy, metav1.DeleteOptions{})
		_ = ar.ValidatingAdmissionPolicies().Delete(context.Background(), noProviderKeysPolicy, metav1.DeleteOptions{})
	})
	create := func(spec corev1.PodSpec) error {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "hardening-", Namespace: sandboxNamespace}, Spec: spec}
		_, err := cs.CoreV1().Pods(sandboxNamespace).Create(t.Context(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	// podSpec copies the template's pod for each case: withContainer
	// changes the container in place.
	sw := sandboxWorkload(t, hardened(t))
	keys := &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "dsh-provider-keys"}}
	envFrom := withContainer(podSpec(sw), func(c *corev1.Container) { c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: keys}) })
	// The API server loads a new policy asynchronously: wait until it
	// refuses the first case.
	var last error
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		last = create(envFrom)
		return refusedBy(last, noProviderKeysPolicy), nil
	})
	if err != nil {
		t.Fatalf("the API server never enforced %s: last answer %v", noProviderKeysPolicy, last)
	}
	refused := map[string]corev1.PodSpec{
		"an env var from the Secret": withContainer(podSpec(sw), func(c *corev1.Container) {
			c.Env = append(c.Env, corev1.EnvVar{Name: "PROVIDER_KEY", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "dsh-provider-keys-extra"}, Key: "OPENAI_API_KEY",
			}}})
		}),
		"the Secret as a volume": withPod(podSpec(sw), func(s *corev1.PodSpec) {
			s.Volumes = append(s.Volumes, corev1.Volume{Name: "keys", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "dsh-provider-keys"}}})
		}),
	}
	for name, spec := range refused {
		if err := create(spec); !refusedBy(err, noProviderKeysPolicy) {
			t.Errorf("a sandbox pod with %s: got %v, want refused by %s", name, err, noProviderKeysPolicy)
		}
	}
	if err := create(podSpec(sw)); err != nil {
		t.Errorf("the hardened sandbox template's pod is refused: %v", err)
	}
}
