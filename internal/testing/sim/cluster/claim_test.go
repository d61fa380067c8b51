package cluster_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestClaimAdoptsWarmSpare(t *testing.T) {
	for _, release := range controller.Releases() {
		t.Run(string(release), func(t *testing.T) { testClaimAdoptsWarmSpare(t, release) })
	}
}

func testClaimAdoptsWarmSpare(t *testing.T, release controller.Release) {
	const adoption = 400 * time.Millisecond
	e := simtest.Start(t, testkit.ControlPlane(t), simtest.Options{Replicas: 2, Delays: controller.Delays{WarmAdoption: adoption}, Release: release})
	e.WaitPool(2)
	spares, err := e.SB.Sandboxes(e.NS).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var spareNames []string
	for _, sb := range spares.Items {
		spareNames = append(spareNames, sb.Name)
	}

	begin := time.Now()
	claim := e.CreateClaim("dsh-alice", agents.PodMetadata{
		Labels:      map[string]string{"sandbox.users.io/user": "alice"},
		Annotations: map[string]string{"sandbox.users.io/note": "hi"},
	})
	claim = e.WaitClaimReady("dsh-alice", testkit.Timeout)
	if took := time.Since(begin); took < adoption {
		t.Errorf("claim Ready after %v, before the %v adoption delay", took, adoption)
	}

	name := claim.Status.Sandbox.Name
	if !slices.Contains(spareNames, name) || !strings.HasPrefix(name, poolName+"-") {
		t.Fatalf("status.sandbox.name %q is not one of the spares %v", name, spareNames)
	}
	if got := claim.Annotations[extensions.AnnotationSandboxName]; got != name {
		t.Errorf("claim annotation %q, want %q", got, name)
	}
	sb, err := e.Sandbox(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sb.Labels[agents.LabelWarmPoolSandbox]; ok {
		t.Error("adopted Sandbox still carries the pool label")
	}
	if sb.Labels[agents.LabelLaunchType] != agents.LaunchTypeWarm || sb.Labels[agents.LabelClaimUID] != string(claim.UID) {
		t.Errorf("Sandbox labels %v", sb.Labels)
	}
	if ref := metav1.GetControllerOf(sb); ref == nil || ref.Kind != "SandboxClaim" || ref.UID != claim.UID {
		t.Errorf("Sandbox controller %+v, want the claim", ref)
	}
	if sb.Spec.PodTemplate.Metadata.Labels["sandbox.users.io/user"] != "alice" {
		t.Errorf("pod template labels %v lack the claim's", sb.Spec.PodTemplate.Metadata.Labels)
	}
	if sb.Status.ServiceFQDN != name+"."+e.NS+".svc.cluster.local" || sb.Status.Selector != controller.Selector(name) {
		t.Errorf("status service %q selector %q", sb.Status.ServiceFQDN, sb.Status.Selector)
	}
	if !slices.Equal(claim.Status.Sandbox.PodIPs, sb.Status.PodIPs) || len(sb.Status.PodIPs) != 1 {
		t.Errorf("claim podIPs %v, sandbox podIPs %v", claim.Status.Sandbox.PodIPs, sb.Status.PodIPs)
	}

	// The running pod gets the claim's metadata and loses the pool label.
	e.Eventually(testkit.Timeout, func() string {
		pod, err := e.Pod(name)
		if err != nil {
			return err.Error()
		}
		_, pooled := pod.Labels[agents.LabelWarmPoolSandbox]
		if pooled || pod.Labels["sandbox.users.io/user"] != "alice" || pod.Annotations["sandbox.users.io/note"] != "hi" {
			return fmt.Sprintf("pod metadata %v %v", pod.Labels, pod.Annotations)
		}
		if pod.Labels[agents.LabelSandboxNameHash] != controller.NameHash(name) {
			return fmt.Sprintf("pod hash label %v", pod.Labels)
		}
		// v1.0 labels the pod with its claim's UID too (PR 1422).
		if uid, ok := pod.Labels[agents.LabelClaimUID]; ok != (release == controller.ReleaseV1) || ok && uid != string(claim.UID) {
			return fmt.Sprintf("pod claim-uid label %q (present %v) in %s", uid, ok, release)
		}
		if ref := metav1.GetControllerOf(pod); ref == nil || ref.Kind != "Sandbox" || ref.UID != sb.UID {
			return fmt.Sprintf("pod controller %+v", ref)
		}
		if pod.Spec.NodeName != sb.Status.NodeName || pod.Status.PodIP != sb.Status.PodIPs[0] {
			return fmt.Sprintf("pod on %s/%s, sandbox says %s/%v", pod.Spec.NodeName, pod.Status.PodIP, sb.Status.NodeName, sb.Status.PodIPs)
		}
		return ""
	})
	// v0.5.6 names the pod in an annotation; v1.0 never writes it.
	podName, annotated := sb.Annotations[agents.AnnotationPodName]
	if release == controller.ReleaseV05 && podName != name || release == controller.ReleaseV1 && annotated {
		t.Errorf("%s: pod-name annotation %q (present %v)", release, podName, annotated)
	}

	// The pool replenishes with a new spare.
	e.WaitPool(2)
	e.Eventually(testkit.Timeout, func() string {
		list, err := e.SB.Sandboxes(e.NS).List(t.Context(), metav1.ListOptions{
			LabelSelector: agents.LabelWarmPoolSandbox + "=" + controller.NameHash(poolName),
		})
		if err != nil {
			return err.Error()
		}
		for _, s := range list.Items {
			if s.Name == name {
				return "the adopted Sandbox is still a spare"
			}
		}
		if len(list.Items) != 2 {
			return fmt.Sprintf("%d spares", len(list.Items))
		}
		return ""
	})
}

func TestClaimStartsColdWhenPoolEmpty(t *testing.T) {
	const cold = 300 * time.Millisecond
	e := start(t, 0, controller.Delays{ColdStart: cold})
	begin := time.Now()
	claim := e.CreateClaim("dsh-bob", agents.PodMetadata{Labels: map[string]string{"sandbox.users.io/user": "bob"}})
	claim = e.WaitClaimReady("dsh-bob", testkit.Timeout)
	if took := time.Since(begin); took < cold {
		t.Errorf("cold claim Ready after %v, before the %v cold start delay", took, cold)
	}
	if claim.Status.Sandbox.Name != "dsh-bob" {
		t.Fatalf("status.sandbox.name %q, want the claim's name", claim.Status.Sandbox.Name)
	}
	sb, err := e.Sandbox("dsh-bob")
	if err != nil {
		t.Fatal(err)
	}
	if sb.Labels[agents.LabelLaunchType] != agents.LaunchTypeCold || sb.Labels[agents.LabelClaimUID] != string(claim.UID) {
		t.Errorf("Sandbox labels %v", sb.Labels)
	}
	if ref := metav1.GetControllerOf(sb); ref == nil || ref.UID != claim.UID {
		t.Errorf("Sandbox controller %+v", ref)
	}
	pod, err := e.Pod("dsh-bob")
	if err != nil {
		t.Fatal(err)
	}
	if pod.Labels["sandbox.users.io/user"] != "bob" {
		t.Errorf("pod labels %v", pod.Labels)
	}
}

func TestClaimWithoutPool(t *testing.T) {
	e := start(t, 0, controller.Delays{})
	e.CreateClaimOn("missing", "orphan", agents.PodMetadata{})
	e.Eventually(testkit.Timeout, func() string {
		r := simtest.Condition(e.Claim("orphan").Status.Conditions, agents.ConditionReady)
		if r.Status != metav1.ConditionFalse || r.Reason != extensions.ReasonWarmPoolNotFound {
			return fmt.Sprintf("Ready %+v, want False/WarmPoolNotFound", r)
		}
		return ""
	})
}

func TestPoolScalesDownAndCollectsSpares(t *testing.T) {
	e := start(t, 2, controller.Delays{})
	e.WaitPool(2)
	pool, err := e.SB.SandboxWarmPools(e.NS).Get(t.Context(), poolName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pool.Spec.Replicas = 1
	if _, err := e.SB.SandboxWarmPools(e.NS).Update(t.Context(), pool, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitPool(1)
	if err := e.SB.SandboxWarmPools(e.NS).Delete(t.Context(), poolName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.Eventually(testkit.Timeout, func() string {
		sbs, err := e.SB.Sandboxes(e.NS).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		pods, err := e.Core.CoreV1().Pods(e.NS).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		if n, m := len(sbs.Items), len(pods.Items); n+m > 0 {
			return fmt.Sprintf("%d sandboxes and %d pods left after the pool was deleted", n, m)
		}
		return ""
	})
}
