package manifests_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestPodSecurityAdmitsEveryWorkloadInItsNamespace applies each variant's
// namespaces and pod classes to the real API server and creates (dry run) a pod of every
// workload it ships, the sandbox template's included, where it runs: the
// API server's PodSecurity admission must admit each one. The sandbox
// namespace enforces restricted, so the node proxy's pod (hostPath,
// hostPort, root) and a privileged sandbox are refused there: nothing that
// can write sandboxes can run a privileged pod beside them.
func TestPodSecurityAdmitsEveryWorkloadInItsNamespace(t *testing.T) {
	a := newApplier(t)
	cs, err := kubernetes.NewForConfig(testkit.ControlPlane(t).AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	create := func(ns string, spec corev1.PodSpec) error {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "podsecurity-", Namespace: ns}, Spec: spec}
		_, err := cs.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	for _, dir := range kustomizationDirs(t) {
		objs := build(t, dir)
		if !wholePlatform(objs) {
			continue
		}
		t.Run(dir, func(t *testing.T) {
			// Namespaces, and the classes pods name (admission refuses a
			// pod whose PriorityClass or RuntimeClass does not exist).
			for _, obj := range objs {
				switch obj.GetKind() {
				case "Namespace", "PriorityClass", "RuntimeClass":
					if err := a.apply(t, obj, false); err != nil {
						t.Fatalf("apply %s %s: %v", obj.GetKind(), obj.GetName(), err)
					}
				}
			}
			r := renderVariant(t, dir)
			if r.namespaces[sandboxNamespace]["pod-security.kubernetes.io/enforce"] != "restricted" {
				t.Errorf("namespace %s does not enforce Pod Security restricted", sandboxNamespace)
			}
			var sandbox, nodeproxy *workload
			for i, w := range r.workloads {
				if err := create(w.namespace, podSpec(w)); err != nil {
					t.Errorf("%s %s in namespace %s: %v", w.kind, w.name, w.namespace, err)
				}
				switch {
				case w.kind == "SandboxTemplate":
					sandbox = &r.workloads[i]
				case w.kind == "DaemonSet":
					nodeproxy = &r.workloads[i]
				}
			}
			if sandbox == nil || nodeproxy == nil {
				t.Fatal("the variant ships no sandbox template or no node proxy")
			}
			if sandbox.namespace != sandboxNamespace || nodeproxy.namespace == sandboxNamespace {
				t.Errorf("sandboxes run in %q and node proxies in %q: want sandboxes in %q, node proxies elsewhere",
					sandbox.namespace, nodeproxy.namespace, sandboxNamespace)
			}
			refused := map[string]corev1.PodSpec{
				"the node proxy's pod": podSpec(*nodeproxy),
				"a privileged sandbox": withContainer(podSpec(*sandbox), func(c *corev1.Container) {
					c.SecurityContext.Privileged, c.SecurityContext.AllowPrivilegeEscalation = ptr.To(true), nil
				}),
				"a sandbox that adds SYS_ADMIN":   withContainer(podSpec(*sandbox), func(c *corev1.Container) { c.SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"} }),
				"a sandbox on the host network":   withPod(podSpec(*sandbox), func(s *corev1.PodSpec) { s.HostNetwork = true }),
				"a sandbox that mounts the host":  withPod(podSpec(*sandbox), func(s *corev1.PodSpec) { s.Volumes = append(s.Volumes, hostPathVolume("/")) }),
				"a sandbox that runs as root":     withPod(podSpec(*sandbox), func(s *corev1.PodSpec) { s.SecurityContext.RunAsUser = ptr.To(int64(0)) }),
				"a sandbox that may escalate":     withContainer(podSpec(*sandbox), func(c *corev1.Container) { c.SecurityContext.AllowPrivilegeEscalation = ptr.To(true) }),
				"a sandbox without seccomp":       withPod(podSpec(*sandbox), func(s *corev1.PodSpec) { s.SecurityContext.SeccompProfile = nil }),
				"a sandbox in the host PID space": withPod(podSpec(*sandbox), func(s *corev1.PodSpec) { s.HostPID = true }),
			}
			for _, name := range slices.Sorted(maps.Keys(refused)) {
				err := create(sandboxNamespace, refused[name])
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "violates PodSecurity") {
					t.Errorf("%s in namespace %s: got %v, want refused by PodSecurity", name, sandboxNamespace, err)
				}
			}
		})
	}
}

// podSpec is w's pod as its controller would create it: a volume for each
// mount the template leaves to the controller (a sandbox's volume claim
// templates) becomes a PersistentVolumeClaim.
func podSpec(w workload) corev1.PodSpec {
	spec := *w.spec.DeepCopy()
	for _, c := range spec.Containers {
		for _, m := range c.VolumeMounts {
			if !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name }) {
				spec.Volumes = append(spec.Volumes, corev1.Volume{Name: m.Name, VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: m.Name},
				}})
			}
		}
	}
	return spec
}

func withPod(spec corev1.PodSpec, change func(*corev1.PodSpec)) corev1.PodSpec {
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	change(&spec)
	return spec
}

func withContainer(spec corev1.PodSpec, change func(*corev1.Container)) corev1.PodSpec {
	c := &spec.Containers[0]
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	if c.SecurityContext.Capabilities == nil {
		c.SecurityContext.Capabilities = &corev1.Capabilities{}
	}
	change(c)
	return spec
}

func hostPathVolume(path string) corev1.Volume {
	return corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}}
}
