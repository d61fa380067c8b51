package sandboxapi_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/gentype"
	"k8s.io/utils/ptr"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// object is what the typed clients hold.
type object interface {
	runtime.Object
	metav1.Object
}

// roundTrip creates in, gives the created object a status with setStatus
// (none when nil), reads it back and reports the spec or status, as parts
// picks them out, that came back changed. It returns what it read.
func roundTrip[T object, L runtime.Object](t *testing.T, client *gentype.ClientWithList[T, L], in T, setStatus func(T), parts func(T) (spec, status any)) T {
	t.Helper()
	sent, err := client.Create(t.Context(), in, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if setStatus != nil {
		setStatus(sent)
		if sent, err = client.UpdateStatus(t.Context(), sent, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("update status: %v", err)
		}
	}
	got, err := client.Get(t.Context(), in.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	wantSpec, _ := parts(in)
	_, wantStatus := parts(sent)
	gotSpec, gotStatus := parts(got)
	if diff := cmp.Diff(wantSpec, gotSpec); diff != "" {
		t.Errorf("spec changed in the round trip (-sent +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantStatus, gotStatus); diff != "" {
		t.Errorf("status changed in the round trip (-sent +got):\n%s", diff)
	}
	return got
}

func podTemplate() agents.PodTemplate {
	return agents.PodTemplate{
		Metadata: agents.PodMetadata{Labels: map[string]string{"app": "dsh"}, Annotations: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "dsh", Image: "example/dsh:1",
			Env: []corev1.EnvVar{{Name: "HOME", Value: "/workspace"}},
		}}},
	}
}

func volumeTemplates() []agents.PersistentVolumeClaimTemplate {
	return []agents.PersistentVolumeClaimTemplate{{
		Metadata: agents.VolumeClaimMetadata{Name: "dsh-home", Labels: map[string]string{"v": "1"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}}
}

// now returns a time the API server stores without loss (whole seconds).
func now() metav1.Time { return metav1.NewTime(time.Now().Truncate(time.Second)) }

func condition(typ, reason string, status metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: "m", LastTransitionTime: now(), ObservedGeneration: 1}
}

func TestSandboxRoundTrip(t *testing.T) {
	ns := testkit.NewNamespace(t)
	client := ns.SB.Sandboxes(ns.Name)
	shutdown := now()
	in := &agents.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: "sb", Annotations: map[string]string{agents.AnnotationPodName: "sb"}},
		Spec: agents.SandboxSpec{
			OperatingMode:        agents.OperatingModeSuspended,
			PodTemplate:          podTemplate(),
			VolumeClaimTemplates: volumeTemplates(),
			Service:              ptr.To(true),
			ShutdownTime:         &shutdown,
			ShutdownPolicy:       agents.ShutdownPolicyRetain,
		},
	}
	got := roundTrip(t, client, in, func(sb *agents.Sandbox) {
		sb.Status = agents.SandboxStatus{
			ServiceFQDN: "sb.ns.svc.cluster.local", Service: "sb", PodIPs: []string{"127.1.0.2"},
			NodeName: "node-a", Selector: agents.LabelSandboxNameHash + "=abc",
			Conditions: []metav1.Condition{
				condition(agents.ConditionReady, agents.ReasonDependenciesReady, metav1.ConditionTrue),
				condition(agents.ConditionSuspended, agents.ReasonNotSuspended, metav1.ConditionFalse),
			},
		}
	}, func(sb *agents.Sandbox) (any, any) { return sb.Spec, sb.Status })
	if got.Annotations[agents.AnnotationPodName] != "sb" {
		t.Errorf("annotation lost: %v", got.Annotations)
	}
}

func TestSandboxDefaultsAndImmutableVolumes(t *testing.T) {
	ns := testkit.NewNamespace(t)
	client := ns.SB.Sandboxes(ns.Name)
	sb, err := client.Create(t.Context(), &agents.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: "sb"},
		Spec:       agents.SandboxSpec{PodTemplate: podTemplate(), VolumeClaimTemplates: volumeTemplates()},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if sb.Spec.OperatingMode != agents.OperatingModeRunning || sb.Spec.ShutdownPolicy != agents.ShutdownPolicyRetain {
		t.Errorf("operatingMode, shutdownPolicy default to %q, %q, want Running, Retain", sb.Spec.OperatingMode, sb.Spec.ShutdownPolicy)
	}
	changed := sb.DeepCopy()
	changed.Spec.VolumeClaimTemplates[0].Metadata.Labels["v"] = "2"
	if _, err := client.Update(t.Context(), changed, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("changing volumeClaimTemplates: got %v, want Invalid", err)
	}
	removed := sb.DeepCopy()
	removed.Spec.VolumeClaimTemplates = nil
	if _, err := client.Update(t.Context(), removed, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("removing volumeClaimTemplates: got %v, want Invalid", err)
	}
}

func TestClaimRoundTrip(t *testing.T) {
	ns := testkit.NewNamespace(t)
	client := ns.SB.SandboxClaims(ns.Name)
	shutdown := now()
	in := &extensions.SandboxClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "dsh-bob", Annotations: map[string]string{extensions.AnnotationSandboxName: "pool-x"}},
		Spec: extensions.SandboxClaimSpec{
			WarmPoolRef: extensions.WarmPoolRef{Name: "pool"},
			AdditionalPodMetadata: agents.PodMetadata{
				Labels:      map[string]string{extensions.UserLabelDomain + "/user": "bob"},
				Annotations: map[string]string{"note": "x"},
			},
			Lifecycle: &extensions.Lifecycle{
				ShutdownTime: &shutdown, TTLSecondsAfterFinished: ptr.To[int32](60),
				ShutdownPolicy: agents.ShutdownPolicyDeleteForeground,
			},
			Env:                  []corev1.EnvVar{{Name: "K", Value: "V"}},
			VolumeClaimTemplates: volumeTemplates(),
		},
	}
	roundTrip(t, client, in, func(c *extensions.SandboxClaim) {
		c.Status = extensions.SandboxClaimStatus{
			Sandbox:    extensions.ClaimedSandbox{Name: "pool-x", PodIPs: []string{"127.1.0.3"}},
			Conditions: []metav1.Condition{condition(agents.ConditionReady, extensions.ReasonWarmPoolNotFound, metav1.ConditionFalse)},
		}
	}, func(c *extensions.SandboxClaim) (any, any) { return c.Spec, c.Status })
}

// TestClaimWithoutWarmPoolRefIsRejected: the schema requires
// spec.warmPoolRef and its name. It does not refuse an empty name, and
// neither does upstream's (no minLength); the admission policy
// (manifests/admission) holds the auth API's claims to its one pool. The
// objects are unstructured: the Go type always sends the name.
func TestClaimWithoutWarmPoolRefIsRejected(t *testing.T) {
	ns := testkit.NewNamespace(t)
	dyn, err := dynamic.NewForConfig(ns.Config)
	if err != nil {
		t.Fatal(err)
	}
	client := dyn.Resource(extensions.GroupVersion.WithResource("sandboxclaims")).Namespace(ns.Name)
	for name, spec := range map[string]map[string]any{
		"missing": {},
		"no name": {"warmPoolRef": map[string]any{}},
	} {
		t.Run(name, func(t *testing.T) {
			claim := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": extensions.GroupVersion.String(), "kind": "SandboxClaim",
				"metadata": map[string]any{"generateName": "c-"}, "spec": spec,
			}}
			if _, err := client.Create(t.Context(), claim, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
				t.Fatalf("got %v, want an Invalid error from server-side validation", err)
			}
		})
	}
}

func TestWarmPoolRoundTrip(t *testing.T) {
	ns := testkit.NewNamespace(t)
	client := ns.SB.SandboxWarmPools(ns.Name)
	in := &extensions.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Name: "pool"},
		Spec: extensions.SandboxWarmPoolSpec{
			Replicas: 2, SandboxTemplateRef: extensions.TemplateRef{Name: "tpl"},
			UpdateStrategy: extensions.UpdateStrategy{Type: extensions.UpdateStrategyRecreate},
		},
	}
	roundTrip(t, client, in, func(p *extensions.SandboxWarmPool) {
		p.Status = extensions.SandboxWarmPoolStatus{Replicas: 2, ReadyReplicas: 1, Selector: agents.LabelWarmPoolSandbox + "=pool"}
	}, func(p *extensions.SandboxWarmPool) (any, any) { return p.Spec, p.Status })
	if _, err := client.Create(t.Context(), &extensions.SandboxWarmPool{
		ObjectMeta: metav1.ObjectMeta{Name: "neg"},
		Spec:       extensions.SandboxWarmPoolSpec{Replicas: -1, SandboxTemplateRef: extensions.TemplateRef{Name: "tpl"}},
	}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("negative replicas: got %v, want Invalid", err)
	}
}

func TestTemplateRoundTrip(t *testing.T) {
	ns := testkit.NewNamespace(t)
	client := ns.SB.SandboxTemplates(ns.Name)
	port := intstr.FromInt32(3080)
	in := &extensions.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "tpl"},
		Spec: extensions.SandboxTemplateSpec{
			PodTemplate: podTemplate(), VolumeClaimTemplates: volumeTemplates(), Service: ptr.To(true),
			NetworkPolicy: &extensions.NetworkPolicySpec{
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					Ports: []networkingv1.NetworkPolicyPort{{Port: &port}},
					From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sandgate-nodeproxy"}}}},
				}},
				Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{"10.0.0.0/8"}}}}}},
			},
			NetworkPolicyManagement:    "Unmanaged",
			EnvVarsInjectionPolicy:     extensions.InjectionAllowed,
			VolumeClaimTemplatesPolicy: extensions.InjectionDisallowed,
		},
	}
	roundTrip(t, client, in, nil, func(tpl *extensions.SandboxTemplate) (any, any) { return tpl.Spec, nil })
	defaults, err := client.Create(t.Context(), &extensions.SandboxTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: extensions.SandboxTemplateSpec{PodTemplate: podTemplate()},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create plain template: %v", err)
	}
	if defaults.Spec.EnvVarsInjectionPolicy != extensions.InjectionDisallowed || defaults.Spec.VolumeClaimTemplatesPolicy != extensions.InjectionDisallowed {
		t.Errorf("injection policies default to %q/%q, want Disallowed", defaults.Spec.EnvVarsInjectionPolicy, defaults.Spec.VolumeClaimTemplatesPolicy)
	}
	if defaults.Spec.NetworkPolicyManagement != "Managed" {
		t.Errorf("networkPolicyManagement defaults to %q, want Managed", defaults.Spec.NetworkPolicyManagement)
	}
}
