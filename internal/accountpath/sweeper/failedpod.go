package sweeper

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
)

// Results of a failed-pod deletion, the label values of
// sandgate_sweeper_failed_pods_deleted_total.
const (
	failedPodDeleted = "ok"
	failedPodGone    = "gone"    // no such pod any more
	failedPodRefused = "refused" // admission: the pod is not a terminal sandbox pod (anymore)
	failedPodError   = "error"
)

// PodDeleter deletes one pod by name in Options.Namespace
// (clientset.CoreV1().Pods(namespace)).
type PodDeleter interface {
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// EventCreator records a Kubernetes Event in Options.Namespace
// (clientset.CoreV1().Events(namespace)).
type EventCreator interface {
	Create(ctx context.Context, ev *corev1.Event, opts metav1.CreateOptions) (*corev1.Event, error)
}

// failureMark identifies one failure of a sandbox's pod: the transition
// of the condition that reported it. A pod that is recreated and fails
// again is a new failure.
func failureMark(sb *agents.Sandbox) time.Time {
	var t time.Time
	for _, c := range sb.Status.Conditions {
		if c.Type == agents.ConditionFinished || c.Type == agents.ConditionReady {
			t = latest(t, c.LastTransitionTime.Time)
		}
	}
	return t
}

// podName is the name of sb's pod: the controller's annotation, else the
// Sandbox's own name, which the controller gives the pod.
func podName(sb *agents.Sandbox) string {
	if n := sb.Annotations[agents.AnnotationPodName]; n != "" {
		return n
	}
	return sb.Name
}

// recoverFailedPod deletes the terminated pod of a managed, running
// sandbox once per failure, so the controller recreates it with the same
// name and volumes (the effect of agent-sandbox's failedPodPolicy:
// Recreate on any controller version). The admission policy lets the auth
// API delete only terminated pods of user sandboxes, so a pod that came
// back since the cache saw the failure is refused, not deleted.
func (s *Sweeper) recoverFailedPod(ctx context.Context, until time.Time, st *sweepState, sb *agents.Sandbox, user string) {
	if s.opts.Pods == nil {
		return
	}
	k := activity.Key{Namespace: sb.Namespace, Name: sb.Name}
	mark := failureMark(sb)
	if done, ok := st.recovered[k]; ok && done.Equal(mark) {
		return
	}
	st.recovered[k] = mark
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, s.opts.PatchTimeout)
	defer cancelTimeout()
	pod := podName(sb)
	err := s.opts.Pods.Delete(ctx, pod, metav1.DeleteOptions{})
	log := s.log.With("namespace", sb.Namespace, "sandbox", sb.Name, "pod", pod)
	result := failedPodDeleted
	switch {
	case err == nil:
		log.Info("deleted terminated sandbox pod for the controller to recreate")
		s.event(ctx, sb, "TerminatedPodDeleted", fmt.Sprintf("Deleted terminated pod %s so that it is created again", pod))
	case apierrors.IsNotFound(err):
		result = failedPodGone
		log.Debug("terminated pod already gone")
	case apierrors.IsForbidden(err), apierrors.IsInvalid(err):
		result = failedPodRefused
		log.Info("terminated pod not deleted: refused", "error", err)
	default:
		result = failedPodError
		delete(st.recovered, k) // try again next sweep
		log.Warn("delete terminated pod", "error", err)
	}
	s.m.failedPods.WithLabelValues(result).Inc()
	s.writeAudit(ctx, "failed_pod_delete", user, sb.Name, result, "pod", pod)
}

// event records on sb what the leader did, for `kubectl describe`.
func (s *Sweeper) event(ctx context.Context, sb *agents.Sandbox, reason, msg string) {
	if s.opts.Events == nil {
		return
	}
	now := metav1.Now()
	pod, _, _ := ParseIdentity(s.opts.Identity)
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: sb.Name + ".", Namespace: sb.Namespace},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: agents.GroupVersion.String(), Kind: "Sandbox",
			Namespace: sb.Namespace, Name: sb.Name, UID: sb.UID,
		},
		Reason: reason, Message: msg, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: "sandgate-authapi"},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
		ReportingController: "sandgate.io/authapi", ReportingInstance: pod,
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.PatchTimeout)
	defer cancel()
	if _, err := s.opts.Events.Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		s.log.Warn("record event", "sandbox", sb.Name, "reason", reason, "error", err)
	}
}
