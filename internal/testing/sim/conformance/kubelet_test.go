package conformance_test

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// The test's part as scheduler and kubelet in a bare harness.

// bind places the pod on the test's node, as the scheduler would.
func (b *bare) bind(name string) {
	b.t.Helper()
	err := b.kube.CoreV1().Pods(b.ns).Bind(b.t.Context(), &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	if err != nil {
		b.t.Fatal(err)
	}
}

// setStatus writes the pod's status, as the kubelet would.
func (b *bare) setStatus(name string, set func(*corev1.PodStatus)) {
	b.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := b.pod(name)
		if err != nil {
			return err
		}
		set(&p.Status)
		_, err = b.kube.CoreV1().Pods(b.ns).UpdateStatus(b.t.Context(), p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		b.t.Fatal(err)
	}
}

// running is the status of a started pod on the test's node with ip.
func running(ready bool, ip string) func(*corev1.PodStatus) {
	return func(s *corev1.PodStatus) {
		readiness := corev1.ConditionFalse
		if ready {
			readiness = corev1.ConditionTrue
		}
		s.Phase = corev1.PodRunning
		s.PodIP, s.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		s.Conditions = []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: readiness},
		}
	}
}

// startPod waits for the Sandbox's pod, binds it and reports it Running
// and Ready with ip; it returns the pod.
func (b *bare) startPod(name, notUID, ip string) *corev1.Pod {
	b.t.Helper()
	p := b.waitPod(name, notUID)
	b.bind(name)
	b.setStatus(name, running(true, ip))
	return p
}

// finishDeletion removes a pod at once, as the kubelet does once the
// containers of a terminating pod have stopped. A pod already gone (the
// API server removes a finished one at once) is fine.
func (b *bare) finishDeletion(name string) {
	b.t.Helper()
	err := b.kube.CoreV1().Pods(b.ns).Delete(b.t.Context(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil && !apierrors.IsNotFound(err) {
		b.t.Fatal(err)
	}
}

// awaitDeletion waits until the controller has deleted the pod (it is
// terminating, or gone), then finishes the deletion.
func (b *bare) awaitDeletion(name string) {
	b.t.Helper()
	testkit.EventuallyNil(b.t, "pod "+name+" deleted by the controller", func() error {
		p, err := b.pod(name)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return err
		case p.DeletionTimestamp == nil:
			return fmt.Errorf("pod %s not deleted", name)
		}
		return nil
	})
	b.finishDeletion(name)
}

// podFields checks status.podIPs and status.nodeName: set to ip and the
// test's node, or both empty when ip is "".
func podFields(ip string) func(*agents.Sandbox) error {
	return func(sb *agents.Sandbox) error {
		gotIP := strings.Join(sb.Status.PodIPs, ",")
		if ip == "" && (gotIP != "" || sb.Status.NodeName != "") || ip != "" && (gotIP != ip || sb.Status.NodeName != node) {
			return fmt.Errorf("podIPs %q nodeName %q, want %q and the node set: %v", gotIP, sb.Status.NodeName, ip, ip != "")
		}
		return nil
	}
}
