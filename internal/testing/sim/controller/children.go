package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
)

// errNoNode means no Ready node matches the pod.
var errNoNode = errors.New("no schedulable node")

// buildPod is the pod a Sandbox runs: named after it, labelled with its
// name hash (and, from v1.0, its claim's UID), controlled by it, with one
// volume per volumeClaimTemplate.
func (c *Controller) buildPod(sb *agents.Sandbox) *corev1.Pod {
	tmpl := sb.Spec.PodTemplate
	lbls := maps.Clone(tmpl.Metadata.Labels)
	if lbls == nil {
		lbls = map[string]string{}
	}
	lbls[agents.LabelSandboxNameHash] = NameHash(sb.Name)
	if uid := sb.Labels[agents.LabelClaimUID]; uid != "" && c.opts.Release == ReleaseV1 {
		lbls[agents.LabelClaimUID] = uid
	}
	spec := tmpl.Spec.DeepCopy()
	for _, t := range sb.Spec.VolumeClaimTemplates {
		vol := corev1.Volume{Name: t.Metadata.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: ClaimName(t.Metadata.Name, sb.Name)},
		}}
		// Template volumes win over pod volumes of the same name, as in
		// a StatefulSet.
		replaced := false
		for j := range spec.Volumes {
			if spec.Volumes[j].Name == vol.Name {
				spec.Volumes[j], replaced = vol, true
			}
		}
		if !replaced {
			spec.Volumes = append(spec.Volumes, vol)
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            sb.Name,
			Namespace:       sb.Namespace,
			Labels:          lbls,
			Annotations:     maps.Clone(tmpl.Metadata.Annotations),
			OwnerReferences: []metav1.OwnerReference{sandboxRef(sb)},
		},
		Spec: *spec,
	}
}

// ensureVolumeClaims creates the Sandbox's PersistentVolumeClaims. They
// stay Pending: no provisioner runs, the simulated kubelet uses a
// directory instead.
func (c *Controller) ensureVolumeClaims(ctx context.Context, s *scope, sb *agents.Sandbox) error {
	for _, t := range sb.Spec.VolumeClaimTemplates {
		name := ClaimName(t.Metadata.Name, sb.Name)
		if existing := s.pvc(sb.Namespace, name); existing != nil {
			if !controlledBy(existing, sb.UID) {
				return fmt.Errorf("volume claim %s belongs to an older sandbox: %w", name, errRetry)
			}
			continue
		}
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{
				Name:            name,
				Namespace:       sb.Namespace,
				Labels:          maps.Clone(t.Metadata.Labels),
				Annotations:     maps.Clone(t.Metadata.Annotations),
				OwnerReferences: []metav1.OwnerReference{sandboxRef(sb)},
			},
			Spec: *t.Spec.DeepCopy(),
		}
		_, err := c.opts.Client.CoreV1().PersistentVolumeClaims(sb.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create volume claim: %w", err)
		}
	}
	return nil
}

// wantsService reports whether a Sandbox asks for a headless Service.
func wantsService(sb *agents.Sandbox) bool { return sb.Spec.Service != nil && *sb.Spec.Service }

// ensureService creates the headless Service, named after the Sandbox, of
// a Sandbox with spec.service true and reports whether the Sandbox has
// one. A name that is not a DNS-1035 label (longer than 63 characters, or
// with a dot) is the API server's to reject.
func (c *Controller) ensureService(ctx context.Context, s *scope, sb *agents.Sandbox) (bool, error) {
	if !wantsService(sb) {
		return false, nil
	}
	if existing := s.service(sb.Namespace, sb.Name); existing != nil {
		if !controlledBy(existing, sb.UID) {
			return false, fmt.Errorf("service %s belongs to an older sandbox: %w", sb.Name, errRetry)
		}
		return true, nil
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            sb.Name,
			Namespace:       sb.Namespace,
			Labels:          map[string]string{agents.LabelSandboxNameHash: NameHash(sb.Name)},
			OwnerReferences: []metav1.OwnerReference{sandboxRef(sb)},
		},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  map[string]string{agents.LabelSandboxNameHash: NameHash(sb.Name)},
		},
	}
	for _, ctr := range sb.Spec.PodTemplate.Spec.Containers {
		for _, p := range ctr.Ports {
			svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{
				Name: p.Name, Port: p.ContainerPort, Protocol: p.Protocol,
			})
		}
	}
	_, err := c.opts.Client.CoreV1().Services(sb.Namespace).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return false, fmt.Errorf("create service: %w", err)
	}
	return true, nil
}

// pickNode stands in for the scheduler: among the Ready, schedulable
// nodes matching the pod's nodeSelector it picks one with the fewest pods
// this controller sees, at random among equals, so a resumed pod may land
// on another node.
func (c *Controller) pickNode(pod *corev1.Pod) (string, error) {
	sel := labels.SelectorFromSet(pod.Spec.NodeSelector)
	var best []string
	least := -1
	for _, obj := range c.nodes.Core().V1().Nodes().Informer().GetStore().List() {
		n := obj.(*corev1.Node)
		if n.Spec.Unschedulable || n.DeletionTimestamp != nil || !nodeReady(n) || !sel.Matches(labels.Set(n.Labels)) {
			continue
		}
		count := 0
		for _, s := range c.scopes {
			pods, _ := s.pods.GetIndexer().ByIndex(byNode, n.Name)
			count += len(pods)
		}
		switch {
		case least < 0 || count < least:
			best, least = []string{n.Name}, count
		case count == least:
			best = append(best, n.Name)
		}
	}
	if len(best) == 0 {
		return "", errNoNode
	}
	return best[rand.IntN(len(best))], nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
