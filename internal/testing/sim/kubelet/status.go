package kubelet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// podState is what a worker knows about its pod's runtime: enough to
// build the whole pod status on every report.
type podState struct {
	spec      corev1.PodSpec
	ip        string
	hostIP    string
	startTime metav1.Time

	restarts     int32 // containers before the current one; -1 until the first starts
	containerID  string
	startedAt    metav1.Time
	ready        bool
	readySince   metav1.Time // last readiness transition
	lastTerminal *corev1.ContainerStateTerminated
	failed       bool // evicted: phase Failed, nothing runs any more
}

func newPodState(pod *corev1.Pod, ip, hostIP string) *podState {
	now := metav1.Now()
	return &podState{spec: pod.Spec, ip: ip, hostIP: hostIP, startTime: now, readySince: now, restarts: -1}
}

// started records a new container: the first one, or a restart.
func (s *podState) started() {
	s.restarts++
	s.containerID = "sim://" + randomHex(16)
	s.startedAt = metav1.Now()
	s.ready = false
	s.readySince = s.startedAt
}

// setReady records that the readiness probe passed.
func (s *podState) setReady() {
	s.ready = true
	s.readySince = metav1.Now()
}

// exited records the container's end with exitCode, for lastState.
func (s *podState) exited(exitCode int32) {
	s.ready = false
	s.lastTerminal = &corev1.ContainerStateTerminated{
		ExitCode:    exitCode,
		Reason:      "Error",
		StartedAt:   s.startedAt,
		FinishedAt:  metav1.Now(),
		ContainerID: s.containerID,
	}
}

// status is the pod status a kubelet would report now. Only the first
// container runs an app; any others are reported running and ready.
func (s *podState) status() corev1.PodStatus {
	ready := corev1.ConditionFalse
	if s.ready {
		ready = corev1.ConditionTrue
	}
	cond := func(t corev1.PodConditionType, st corev1.ConditionStatus, since metav1.Time) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: st, LastTransitionTime: since}
	}
	status := corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			cond(corev1.PodReadyToStartContainers, corev1.ConditionTrue, s.startTime),
			cond(corev1.PodInitialized, corev1.ConditionTrue, s.startTime),
			cond(corev1.PodReady, ready, s.readySince),
			cond(corev1.ContainersReady, ready, s.readySince),
			cond(corev1.PodScheduled, corev1.ConditionTrue, s.startTime),
		},
		HostIP:    s.hostIP,
		HostIPs:   []corev1.HostIP{{IP: s.hostIP}},
		PodIP:     s.ip,
		PodIPs:    []corev1.PodIP{{IP: s.ip}},
		StartTime: &s.startTime,
	}
	if !s.ready {
		status.Conditions[2].Reason = "ContainersNotReady"
		status.Conditions[3].Reason = "ContainersNotReady"
	}
	if s.failed {
		status.Phase, status.Reason, status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
	}
	for i, c := range s.spec.Containers {
		cs := corev1.ContainerStatus{
			Name:    c.Name,
			Image:   c.Image,
			ImageID: "sim://" + c.Image,
			Ready:   true,
			Started: ptr.To(true),
			State:   corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: s.startTime}},
		}
		if i == 0 {
			cs.ContainerID = s.containerID
			cs.Ready = s.ready
			cs.RestartCount = max(s.restarts, 0)
			cs.State.Running.StartedAt = s.startedAt
			if s.lastTerminal != nil {
				cs.LastTerminationState = corev1.ContainerState{Terminated: s.lastTerminal.DeepCopy()}
			}
		}
		status.ContainerStatuses = append(status.ContainerStatuses, cs)
	}
	return status
}

// patchStatus replaces the pod's status with a merge patch that names the
// pod's UID, so a newer pod of the same name is never touched.
func (w *worker) patchStatus(ctx context.Context, status corev1.PodStatus) error {
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": w.uid},
		"status":   status,
	})
	if err != nil {
		return fmt.Errorf("encode pod status: %w", err)
	}
	_, err = w.k.opts.Client.CoreV1().Pods(w.namespace).Patch(ctx, w.name, types.MergePatchType, body, metav1.PatchOptions{}, "status")
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
