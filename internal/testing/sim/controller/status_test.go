package controller

import (
	"errors"
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

// pod is a pod as the simulated kubelet reports it: scheduled, Running,
// with one IP.
func pod(ready bool, ip string, deleting bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sb"},
		Spec:       corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{
			Phase:  corev1.PodRunning,
			PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionFalse},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			},
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

func withPhase(p *corev1.Pod, phase corev1.PodPhase) *corev1.Pod {
	p.Status.Phase = phase
	return p
}

func withScheduled(p *corev1.Pod, cond *corev1.PodCondition) *corev1.Pod {
	p.Status.Conditions = p.Status.Conditions[:1]
	if cond != nil {
		p.Status.Conditions = append(p.Status.Conditions, *cond)
	}
	return p
}

func TestSandboxStatus(t *testing.T) {
	const (
		notSuspended = "Suspended=False/NotSuspended"
		scheduled    = "PodScheduled=True/PodScheduled"
		absent       = " PodScheduled=False/PodAbsent" // v1.0.13 only
	)
	suspendedBefore := []metav1.Condition{{Type: agents.ConditionSuspended, Status: metav1.ConditionTrue, Reason: agents.ReasonPodTerminated}}
	failedBefore := []metav1.Condition{{Type: agents.ConditionFinished, Status: metav1.ConditionTrue, Reason: agents.ReasonPodFailed}}
	oldStatus := agents.SandboxStatus{PodIPs: []string{"127.100.0.9"}, NodeName: "node-1"}
	tests := []struct {
		name       string
		mode       agents.OperatingMode
		conds      []metav1.Condition
		view       sandboxView
		noService  bool
		v1, v05    string // conditions; v05 "" means as v1
		wantIPs    []string
		wantNodeOK bool
	}{
		{name: "running, pod ready", view: sandboxView{pods: []*corev1.Pod{pod(true, "127.100.0.1", false)}},
			v1: "Ready=True/DependenciesReady " + notSuspended + " " + scheduled, wantIPs: []string{"127.100.0.1"}, wantNodeOK: true},
		{name: "running, pod starting", view: sandboxView{pods: []*corev1.Pod{pod(false, "127.100.0.1", false)}},
			v1: "Ready=False/DependenciesNotReady " + notSuspended + " " + scheduled, wantIPs: []string{"127.100.0.1"}, wantNodeOK: true},
		{name: "running, no pod yet", view: sandboxView{waiting: 1},
			v1: "Ready=False/DependenciesNotReady " + notSuspended + absent, v05: "Ready=False/DependenciesNotReady " + notSuspended},
		{name: "two pods clear the pod fields", view: sandboxView{pods: []*corev1.Pod{pod(true, "127.100.0.1", false), pod(true, "127.100.0.2", false)}},
			v1: "Ready=False/MultiplePods " + notSuspended + " PodScheduled=Unknown/PodSchedulingUnknown"},
		{name: "suspending keeps the pod fields", mode: agents.OperatingModeSuspended,
			view: sandboxView{pods: []*corev1.Pod{pod(true, "127.100.0.1", true)}},
			v1:   "Ready=False/SandboxSuspended Suspended=False/PodTerminating " + scheduled, wantIPs: []string{"127.100.0.1"}, wantNodeOK: true},
		{name: "suspended clears them once the pod is gone", mode: agents.OperatingModeSuspended,
			v1: "Ready=False/SandboxSuspended Suspended=True/PodTerminated" + absent, v05: "Ready=False/SandboxSuspended Suspended=True/PodTerminated"},
		{name: "resuming sets Suspended back to False", conds: suspendedBefore,
			v1: "Ready=False/DependenciesNotReady " + notSuspended + absent, v05: "Ready=False/DependenciesNotReady " + notSuspended},
		{name: "resumed pod ready", conds: suspendedBefore, view: sandboxView{pods: []*corev1.Pod{pod(true, "127.101.0.4", false)}},
			v1: "Ready=True/DependenciesReady " + notSuspended + " " + scheduled, wantIPs: []string{"127.101.0.4"}, wantNodeOK: true},
		{name: "running pod terminating", view: sandboxView{pods: []*corev1.Pod{pod(true, "127.100.0.1", true)}},
			v1:  "Ready=False/DependenciesNotReady " + notSuspended + " " + scheduled,
			v05: "Ready=True/DependenciesReady " + notSuspended + " " + scheduled, wantIPs: []string{"127.100.0.1"}, wantNodeOK: true},
		{name: "pod failed", view: sandboxView{pods: []*corev1.Pod{withPhase(pod(false, "127.100.0.1", false), corev1.PodFailed)}},
			v1: "Ready=False/PodFailed " + notSuspended + " Finished=True/PodFailed " + scheduled, wantIPs: []string{"127.100.0.1"}, wantNodeOK: true},
		{name: "pod succeeded", view: sandboxView{pods: []*corev1.Pod{withPhase(pod(false, "127.100.0.1", false), corev1.PodSucceeded)}},
			v1: "Ready=False/PodSucceeded " + notSuspended + " Finished=True/PodSucceeded " + scheduled, wantIPs: []string{"127.100.0.1"}, wantNodeOK: true},
		{name: "Finished after the failed pod is gone", mode: agents.OperatingModeSuspended, conds: failedBefore,
			v1:  "Ready=False/SandboxSuspended Suspended=True/PodTerminated Finished=True/PodFailed" + absent,
			v05: "Ready=False/SandboxSuspended Suspended=True/PodTerminated"},
		{name: "Finished with a later pod", conds: failedBefore, view: sandboxView{pods: []*corev1.Pod{pod(false, "127.100.0.1", false)}},
			v1:  "Ready=False/DependenciesNotReady " + notSuspended + " Finished=False/NotFinished " + scheduled,
			v05: "Ready=False/DependenciesNotReady " + notSuspended + " " + scheduled, wantIPs: []string{"127.100.0.1"}, wantNodeOK: true},
		{name: "pod not yet scheduled", view: sandboxView{pods: []*corev1.Pod{withScheduled(pod(false, "127.100.0.1", false), nil)}},
			v1: "Ready=False/DependenciesNotReady " + notSuspended + " PodScheduled=Unknown/PodSchedulingUnknown", wantIPs: []string{"127.100.0.1"}, wantNodeOK: true},
		{name: "pod unschedulable", view: sandboxView{pods: []*corev1.Pod{withScheduled(pod(false, "127.100.0.1", false),
			&corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"})}},
			v1: "Ready=False/DependenciesNotReady " + notSuspended + " PodScheduled=False/Unschedulable", wantIPs: []string{"127.100.0.1"}, wantNodeOK: true},
		{name: "invalid configuration", view: sandboxView{pods: []*corev1.Pod{pod(true, "127.100.0.1", false)}, invalid: "Service is invalid"},
			v1: "Ready=False/InvalidConfiguration " + notSuspended + " " + scheduled, wantIPs: []string{"127.100.0.1"}, wantNodeOK: true},
		{name: "reconcile error", view: sandboxView{pods: []*corev1.Pod{pod(true, "127.100.0.1", false)}, failure: errors.New("boom")},
			v1: "Ready=False/ReconcilerError " + notSuspended + " " + scheduled, wantIPs: []string{"127.100.0.1"}, wantNodeOK: true},
		{name: "service missing", noService: true, view: sandboxView{pods: []*corev1.Pod{pod(true, "127.100.0.1", false)}},
			v1: "Ready=False/DependenciesNotReady " + notSuspended + " " + scheduled, wantIPs: []string{"127.100.0.1"}, wantNodeOK: true},
	}
	for _, release := range Releases() {
		c := &Controller{opts: Options{Release: release}.withDefaults()}
		for _, tt := range tests {
			t.Run(string(release)+"/"+tt.name, func(t *testing.T) {
				sb := &agents.Sandbox{ObjectMeta: metav1.ObjectMeta{Name: "sb", Namespace: "ns", Generation: 3},
					Spec: agents.SandboxSpec{OperatingMode: tt.mode, Service: ptr.To(true)}}
				sb.Status = *oldStatus.DeepCopy()
				sb.Status.Conditions = slices.Clone(tt.conds)
				v := tt.view
				v.hasService = !tt.noService
				c.sandboxStatus(sb, &v)
				st := sb.Status
				want := tt.v1
				if release == ReleaseV05 && tt.v05 != "" {
					want = tt.v05
				}
				if got := condsString(st.Conditions); got != want {
					t.Errorf("conditions\n got %s\nwant %s", got, want)
				}
				if !slices.Equal(st.PodIPs, tt.wantIPs) || (st.NodeName != "") != tt.wantNodeOK {
					t.Errorf("podIPs %v nodeName %q, want %v (node set %v)", st.PodIPs, st.NodeName, tt.wantIPs, tt.wantNodeOK)
				}
				if st.ServiceFQDN == "" && !tt.noService || st.Selector != Selector("sb") {
					t.Errorf("service fields %q %q %q", st.ServiceFQDN, st.Service, st.Selector)
				}
				if r := findCondition(st.Conditions, agents.ConditionReady); r.ObservedGeneration != 3 {
					t.Errorf("observedGeneration %d", r.ObservedGeneration)
				}
			})
		}
	}
}

// condsString is "Type=Status/Reason" of the conditions that matter, in a
// fixed order, absent ones left out.
func condsString(conds []metav1.Condition) string {
	var out []string
	for _, typ := range []string{agents.ConditionReady, agents.ConditionSuspended, agents.ConditionFinished, agents.ConditionPodScheduled} {
		if c := findCondition(conds, typ); c != nil {
			out = append(out, typ+"="+string(c.Status)+"/"+c.Reason)
		}
	}
	return strings.Join(out, " ")
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
	p := (&Controller{opts: Options{}.withDefaults()}).buildPod(sb)
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

	// v1.0 labels the pod with its claim's UID; v0.5.6 does not.
	sb.Labels = map[string]string{agents.LabelClaimUID: "claim-1"}
	for release, want := range map[Release]string{ReleaseV1: "claim-1", ReleaseV05: ""} {
		p := (&Controller{opts: Options{Release: release}.withDefaults()}).buildPod(sb)
		if got := p.Labels[agents.LabelClaimUID]; got != want {
			t.Errorf("%s: pod claim-uid %q, want %q", release, got, want)
		}
	}
}

func TestReleases(t *testing.T) {
	if got := (Options{}).withDefaults().Release; got != ReleaseV1 {
		t.Errorf("default release %q, want %q", got, ReleaseV1)
	}
	for _, r := range append(Releases(), "") {
		if err := r.Check(); err != nil {
			t.Errorf("Check(%q) = %v", r, err)
		}
	}
	for _, r := range []Release{"v1.0.12", "v0.5", "latest"} {
		if err := r.Check(); err == nil || !strings.Contains(err.Error(), string(r)) {
			t.Errorf("Check(%q) = %v, want an error naming it", r, err)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	err := Options{Workers: -1, Delays: Delays{Resume: -1}, Namespaces: []string{""}, Release: "v0.9"}.Validate()
	if err == nil {
		t.Fatal("invalid options passed")
	}
	for _, want := range []string{"client", "sandboxes", "workers", "delays", "namespace", `release "v0.9"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}
