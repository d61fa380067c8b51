package cluster_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/testing/sim/cluster"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
	"github.com/sandgate/sandgate/internal/testing/sim/simtest"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestLeaveScheduling runs the controller as cmd/sandbox-controller-standin
// does against a real cluster: it creates the pool's pods without a node,
// for the kube-scheduler to place, and does not report them unplaceable.
func TestLeaveScheduling(t *testing.T) {
	n := testkit.NewNamespace(t)
	ns, core, sb := n.Name, n.Kube, n.SB
	ctrl, err := controller.New(controller.Options{Client: core, Sandboxes: sb, Namespaces: []string{ns}, LeaveScheduling: true})
	if err != nil {
		t.Fatal(err)
	}
	testkit.Run(t, "controller run", ctrl.Run)
	if err := cluster.CreatePool(t.Context(), sb, ns, poolName, 1, "gateway.example"); err != nil {
		t.Fatal(err)
	}

	testkit.EventuallyNil(t, "the pool's pod left for the scheduler", func() error {
		if waiting := leftUnscheduled(t, core, sb, ns); waiting != "" {
			return errors.New(waiting)
		}
		return nil
	})
}

// leftUnscheduled returns "" once the pool's Sandbox has its pod, without
// a node, and reports it Pending and not yet scheduled; else what is
// missing.
func leftUnscheduled(t *testing.T, core kubernetes.Interface, sb *sandboxapi.Client, ns string) string {
	boxes, err := sb.Sandboxes(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil || len(boxes.Items) != 1 {
		return fmt.Sprintf("sandboxes: %d, %v; want 1", len(boxes.Items), err)
	}
	box := boxes.Items[0]
	pod, err := core.CoreV1().Pods(ns).Get(t.Context(), box.Name, metav1.GetOptions{})
	if err != nil {
		return "pod: " + err.Error()
	}
	if pod.Spec.NodeName != "" {
		t.Fatalf("pod placed on %q; the scheduler should place it", pod.Spec.NodeName)
	}
	ready := simtest.Condition(box.Status.Conditions, agents.ConditionReady)
	if ready.Reason != agents.ReasonDependenciesNotReady || !strings.HasPrefix(ready.Message, "Pod exists with phase: Pending") {
		return fmt.Sprintf("Sandbox Ready condition %+v, want the pod reported Pending", ready)
	}
	// No scheduler runs here: the pod never reports PodScheduled.
	if s := simtest.Condition(box.Status.Conditions, agents.ConditionPodScheduled); s.Status != metav1.ConditionUnknown || s.Reason != agents.ReasonPodSchedulingUnknown {
		return fmt.Sprintf("Sandbox PodScheduled condition %+v, want Unknown/PodSchedulingUnknown", s)
	}
	return ""
}
