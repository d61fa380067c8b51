package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
)

// noNodeRetry spaces attempts to place a pod while no node fits.
const noNodeRetry = time.Second

// sandboxView is what one Sandbox reconcile observed and did.
type sandboxView struct {
	pods       []*corev1.Pod // owned by this Sandbox, from the cache
	created    *corev1.Pod   // created in this pass
	waiting    time.Duration // left of a start delay
	noNode     bool          // no node to place the pod on
	hasService bool
	// invalid is the API server's message when it permanently rejected
	// an object derived from the Sandbox (v1.0.4+: InvalidConfiguration,
	// not retried until the spec changes).
	invalid string
	// failure is why an object could not be made this pass: reported as
	// ReconcilerError and retried with backoff.
	failure error
}

// pod is the Sandbox's one pod, if exactly one exists.
func (v *sandboxView) pod() *corev1.Pod {
	if v.created != nil {
		return v.created
	}
	if len(v.pods) == 1 {
		return v.pods[0]
	}
	return nil
}

// syncSandbox makes a Sandbox's volumes, pod and Service match its spec,
// and reports what it sees in its status.
func (c *Controller) syncSandbox(ctx context.Context, s *scope, ns, name string) (time.Duration, error) {
	cached := s.sandbox(ns, name)
	if live, err := collectLive(ctx, c, s, kindSandbox, ns, name, cached); !live || err != nil {
		return 0, err
	}
	sb := cached.DeepCopy()
	v := &sandboxView{invalid: c.knownInvalid(sb)}
	for _, p := range s.ownedPods(ns, name) {
		if controlledBy(p, sb.UID) {
			v.pods = append(v.pods, p)
		}
	}
	err := c.reconcileChildren(ctx, s, sb, v)
	switch {
	case err == nil:
	case errors.Is(err, errRetry):
		return 0, err // the cache lags: look again before reporting
	case c.opts.Release == ReleaseV1 && apierrors.IsInvalid(err):
		v.invalid = apiMessage(err)
		c.reject(sb.UID, sb.Generation, v.invalid)
		c.log.Warn("invalid configuration, not retried until the spec changes",
			"namespace", ns, "sandbox", name, "error", err)
	default:
		v.failure = err
	}
	if err := c.writeSandbox(ctx, cached, sb, v); err != nil {
		return 0, err
	}
	switch {
	case v.failure != nil:
		return 0, v.failure
	case v.waiting > 0:
		return v.waiting, nil
	case v.noNode:
		return noNodeRetry, nil
	}
	return 0, nil
}

// knownInvalid is the message of an earlier permanent rejection for this
// generation (v1.0.13 only), else "": the controller then makes nothing
// until the spec changes. It remembers the rejection, and reads it from
// the status after a restart.
func (c *Controller) knownInvalid(sb *agents.Sandbox) string {
	if c.opts.Release != ReleaseV1 {
		return ""
	}
	if msg := c.rejectedAt(sb.UID, sb.Generation); msg != "" {
		return msg
	}
	r := findCondition(sb.Status.Conditions, agents.ConditionReady)
	if r == nil || r.Reason != agents.ReasonInvalidConfiguration || r.ObservedGeneration != sb.Generation {
		return ""
	}
	return r.Message
}

// apiMessage is the API server's own message in err.
func apiMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}

// reconcileChildren makes the Sandbox's volume claims, then its pod (or,
// suspended, deletes it), then its Service, in upstream's order: a
// rejected Service does not stop the pod, missing volume claims do.
// Nothing is made while the configuration is known invalid or more than
// one pod is owned (upstream refuses to choose, and leaves the Service).
func (c *Controller) reconcileChildren(ctx context.Context, s *scope, sb *agents.Sandbox, v *sandboxView) error {
	if v.invalid != "" || len(v.pods) > 1 {
		v.hasService = wantsService(sb) && s.ownedService(sb) != nil
		return nil
	}
	err := c.ensureVolumeClaims(ctx, s, sb)
	if err == nil {
		if operatingMode(sb) == agents.OperatingModeRunning {
			err = c.runPod(ctx, s, sb, v)
		} else {
			err = c.stopPods(ctx, v.pods)
		}
	}
	var serviceErr error
	v.hasService, serviceErr = c.ensureService(ctx, s, sb)
	return errors.Join(err, serviceErr)
}

// runPod creates the pod once its start delay has passed, or brings the
// existing pod's metadata in line with the pod template.
func (c *Controller) runPod(ctx context.Context, s *scope, sb *agents.Sandbox, v *sandboxView) error {
	if len(v.pods) > 0 {
		c.doneWaiting(sb.UID)
		if p := v.pod(); p != nil && p.DeletionTimestamp == nil {
			return c.syncPodMetadata(ctx, sb, p)
		}
		return nil // the suspended pod still terminating
	}
	delay := c.opts.Delays.ColdStart
	if resuming(sb) {
		delay = c.opts.Delays.Resume
	}
	if left := c.waitLeft(sb.UID, delay); left > 0 {
		v.waiting = left
		return nil
	}
	pod := c.buildPod(sb)
	if !c.opts.LeaveScheduling {
		node, err := c.pickNode(pod)
		if err != nil {
			v.noNode = true
			return nil
		}
		pod.Spec.NodeName = node
	}
	created, err := c.opts.Client.CoreV1().Pods(sb.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create pod: %w", errRetry) // the cache is behind
	}
	if err != nil {
		return fmt.Errorf("create pod: %w", err)
	}
	c.doneWaiting(sb.UID)
	c.log.Info("pod created", "namespace", sb.Namespace, "sandbox", sb.Name, "node", created.Spec.NodeName)
	v.created = created
	return nil
}

// resuming reports whether a Running Sandbox without a pod comes back
// from a suspend: its last status still says suspended.
func resuming(sb *agents.Sandbox) bool {
	s := findCondition(sb.Status.Conditions, agents.ConditionSuspended)
	return s != nil && s.Reason != agents.ReasonNotSuspended
}

// stopPods deletes the Sandbox's pods for a suspend; the simulated
// kubelet finishes the graceful deletion.
func (c *Controller) stopPods(ctx context.Context, pods []*corev1.Pod) error {
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		err := c.opts.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &p.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete pod: %w", err)
		}
		c.log.Info("pod deleted for suspend", "namespace", p.Namespace, "pod", p.Name)
	}
	return nil
}

// syncPodMetadata patches the live pod's labels and annotations to match
// the pod template: at adoption the pool label goes and the claim's
// additionalPodMetadata arrives.
func (c *Controller) syncPodMetadata(ctx context.Context, sb *agents.Sandbox, pod *corev1.Pod) error {
	want := c.buildPod(sb).ObjectMeta
	patch := map[string]map[string]any{"labels": {}, "annotations": {}}
	for k, v := range want.Labels {
		if pod.Labels[k] != v {
			patch["labels"][k] = v
		}
	}
	if _, ok := pod.Labels[agents.LabelWarmPoolSandbox]; ok {
		if _, keep := want.Labels[agents.LabelWarmPoolSandbox]; !keep {
			patch["labels"][agents.LabelWarmPoolSandbox] = nil
		}
	}
	for k, v := range want.Annotations {
		if pod.Annotations[k] != v {
			patch["annotations"][k] = v
		}
	}
	if len(patch["labels"])+len(patch["annotations"]) == 0 {
		return nil
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid": pod.UID, "labels": patch["labels"], "annotations": patch["annotations"],
	}})
	if err != nil {
		return fmt.Errorf("encode pod metadata patch: %w", err)
	}
	_, err = c.opts.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, body, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patch pod metadata: %w", err)
	}
	return nil
}

// writeSandbox sets the pod-name annotation and the status when they
// changed.
func (c *Controller) writeSandbox(ctx context.Context, cached, sb *agents.Sandbox, v *sandboxView) error {
	client := c.opts.Sandboxes.Sandboxes(sb.Namespace)
	if want := c.podNameAnnotation(cached, v); cached.Annotations[agents.AnnotationPodName] != want {
		var value any
		if want != "" {
			value = want
		}
		body, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": cached.ResourceVersion,
			"annotations":     map[string]any{agents.AnnotationPodName: value},
		}})
		if err != nil {
			return fmt.Errorf("encode annotation patch: %w", err)
		}
		updated, err := client.Patch(ctx, sb.Name, types.MergePatchType, body, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("annotate sandbox: %w", err)
		}
		updated.Status = sb.Status
		sb = updated
	}
	c.sandboxStatus(sb, v)
	if equality.Semantic.DeepEqual(cached.Status, sb.Status) {
		return nil
	}
	if _, err := client.UpdateStatus(ctx, sb, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update sandbox status: %w", err)
	}
	return nil
}

// podNameAnnotation is the value agents.x-k8s.io/pod-name should have:
// v0.5.6 writes the current pod's name; v1.0.13 never writes it but, like
// v0.5.6, clears a value that no longer names the owned pod. With several
// pods the value stays.
func (c *Controller) podNameAnnotation(cached *agents.Sandbox, v *sandboxView) string {
	current := cached.Annotations[agents.AnnotationPodName]
	switch p := v.pod(); {
	case p != nil && c.opts.Release == ReleaseV05:
		return p.Name
	case p != nil && current == p.Name:
		return current
	case p == nil && len(v.pods) > 1:
		return current
	}
	return ""
}
