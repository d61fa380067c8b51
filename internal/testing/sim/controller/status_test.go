package controller

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// The reconcile paths run against a real API server in
// internal/testing/sim/cluster; these tests cover the pure parts.
func TestMain(m *testing.M) { testkit.Main(m) }

func TestNameHash(t *testing.T) {
	// FNV-32a reference values, zero-padded to eight hex digits.
	for in, want := range map[string]string{"": "811c9dc5", "a": "e40c292c", "foobar": "bf9cf968"} {
		if got := NameHash(in); got != want {
			t.Errorf("NameHash(%q) = %s, want %s", in, got, want)
		}
	}
	if got := Selector("sb"); got != agents.LabelSandboxNameHash+"="+NameHash("sb") {
		t.Errorf("Selector = %s", got)
	}
}

func pod(ready bool, ip string, deleting bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sb"},
		Spec:       corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			PodIPs:     []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}},
		},
	}
	if ready {
		p.Status.Conditions[0].Status = corev1.ConditionTrue
	}
	if deleting {
		p.DeletionTimestamp = ptr.To(metav1.Now())
	}
	return p
}

func TestSandboxStatus(t *testing.T) {
	suspendedBefore := []metav1.Condition{{Type: agents.ConditionSuspended, Status: metav1.ConditionTrue, Reason: agents.ReasonPodTerminated}}
	oldStatus := agents.SandboxStatus{PodIPs: []string{"127.100.0.9"}, NodeName: "node-1"}
	tests := []struct {
		name       string
		mode       agents.OperatingMode
		conds      []metav1.Condition
		view       sandboxView
		ready      string // status/reason
		suspended  string // "" when the condition must be absent
		wantIPs    []string
		wantNodeOK bool
	}{
		{name: "running, pod ready", view: sandboxView{pods: []*corev1.Pod{pod(true, "127.100.0.1", false)}},
			ready: "True/DependenciesReady", wantIPs: []string{"127.100.0.1"}, wantNodeOK: true},
		{name: "running, pod starting", view: sandboxView{pods: []*corev1.Pod{pod(false, "127.100.0.1", false)}},
			ready: "False/DependenciesNotReady", wantIPs: []string{"127.100.0.1"}, wantNodeOK: true},
		{name: "running, no pod yet", view: sandboxView{waiting: 1},
			ready: "False/DependenciesNotReady"},
		{name: "two pods", view: sandboxView{pods: []*corev1.Pod{pod(true, "127.100.0.1", false), pod(true, "127.100.0.2", false)}},
			ready: "False/MultiplePods", wantIPs: oldStatus.PodIPs, wantNodeOK: true},
		{name: "suspending keeps the pod fields", mode: agents.OperatingModeSuspended,
			view:  sandboxView{pods: []*corev1.Pod{pod(true, "127.100.0.1", true)}},
			ready: "False/SandboxSuspended", suspended: "False/PodTerminating", wantIPs: []string{"127.100.0.1"}, wantNodeOK: true},
		{name: "suspended clears them once the pod is gone", mode: agents.OperatingModeSuspended,
			ready: "False/SandboxSuspended", suspended: "True/PodTerminated"},
		{name: "resuming sets Suspended back to False", conds: suspendedBefore,
			ready: "False/DependenciesNotReady", suspended: "False/NotSuspended"},
		{name: "resumed pod ready", conds: suspendedBefore, view: sandboxView{pods: []*corev1.Pod{pod(true, "127.101.0.4", false)}},
			ready: "True/DependenciesReady", suspended: "False/NotSuspended", wantIPs: []string{"127.101.0.4"}, wantNodeOK: true},
	}
	c := &Controller{opts: Options{}.withDefaults()}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sb := &agents.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "sb", Namespace: "ns", Generation: 3},
				Spec: agents.SandboxSpec{OperatingMode: tt.mode, Service: ptr.To(true)}}
			sb.Status = *oldStatus.DeepCopy()
			sb.Status.Conditions = slices.Clone(tt.conds)
			v := tt.view
			v.hasService = true
			c.sandboxStatus(sb, &v)
			st := sb.Status
			if got := condString(st.Conditions, agents.ConditionReady); got != tt.ready {
				t.Errorf("Ready %s, want %s", got, tt.ready)
			}
			if got := condString(st.Conditions, agents.ConditionSuspended); got != tt.suspended {
				t.Errorf("Suspended %q, want %q", got, tt.suspended)
			}
			if !slices.Equal(st.PodIPs, tt.wantIPs) || (st.NodeName != "") != tt.wantNodeOK {
				t.Errorf("podIPs %v nodeName %q, want %v (node set %v)", st.PodIPs, st.NodeName, tt.wantIPs, tt.wantNodeOK)
			}
			if st.ServiceFQDN != "sb.ns.svc.cluster.local" || st.Service != "sb" || st.Selector != Selector("sb") {
				t.Errorf("service fields %q %q %q", st.ServiceFQDN, st.Service, st.Selector)
			}
			if r := findCondition(st.Conditions, agents.ConditionReady); r.ObservedGeneration != 3 {
				t.Errorf("observedGeneration %d", r.ObservedGeneration)
			}
		})
	}
}

func condString(conds []metav1.Condition, typ string) string {
	c := findCondition(conds, typ)
	if c == nil {
		return ""
	}
	return string(c.Status) + "/" + c.Reason
}

func TestBuildPod(t *testing.T) {
	sb := &agents.Sandbox{
		ObjectMeta: metav1.ObjectMeta{Name: "dsh-pool-abcde", Namespace: "ns", UID: "u1"},
		Spec: agents.SandboxSpec{
			PodTemplate: agents.PodTemplate{
				Metadata: agents.PodMetadata{Labels: map[string]string{"app": "dsh"}, Annotations: map[string]string{"a": "b"}},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "dsh", Image: "dsh:1"}},
					Volumes:    []corev1.Volume{{Name: "dsh-home"}, {Name: "tmp"}},
				},
			},
			VolumeClaimTemplates: []agents.PersistentVolumeClaimTemplate{{Metadata: agents.VolumeClaimMetadata{Name: "dsh-home"}}},
		},
	}
	p := buildPod(sb)
	if p.Name != sb.Name || p.Labels["app"] != "dsh" || p.Labels[agents.LabelSandboxNameHash] != NameHash(sb.Name) || p.Annotations["a"] != "b" {
		t.Errorf("metadata %+v", p.ObjectMeta)
	}
	if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != "u1" || ref.Kind != "Sandbox" {
		t.Errorf("controller %+v", ref)
	}
	var vols []string
	for _, v := range p.Spec.Volumes {
		claim := ""
		if v.PersistentVolumeClaim != nil {
			claim = v.PersistentVolumeClaim.ClaimName
		}
		vols = append(vols, v.Name+"="+claim)
	}
	if want := []string{"dsh-home=dsh-home-dsh-pool-abcde", "tmp="}; !slices.Equal(vols, want) {
		t.Errorf("volumes %v, want %v", vols, want)
	}
	if _, ok := sb.Spec.PodTemplate.Metadata.Labels[agents.LabelSandboxNameHash]; ok {
		t.Error("buildPod changed the Sandbox's template")
	}
}

func TestOptionsValidate(t *testing.T) {
	err := Options{Workers: -1, Delays: Delays{Resume: -1}, Namespaces: []string{""}}.Validate()
	if err == nil {
		t.Fatal("invalid options passed")
	}
	for _, want := range []string{"client", "sandboxes", "workers", "delays", "namespace"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}
