package controller

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// dependent is an object whose controller may be gone, with its delete call.
type dependent struct {
	obj    metav1.Object
	what   string
	delete func(context.Context, string, metav1.DeleteOptions) error
}

// collect stands in for the garbage collector: it deletes the objects
// whose controller is the kind ns/name owner but not its live incarnation
// (live is "" when the owner is gone). Before deleting it asks the API
// server whether the owner really is gone, as the garbage collector does,
// so a lagging cache never deletes a live object's dependents.
func (c *Controller) collect(ctx context.Context, s *scope, kind, ns, name string, live types.UID) error {
	var deps []dependent
	key := ownerKey(ns, kind, name)
	if kind == kindSandbox {
		core := c.opts.Client.CoreV1()
		for _, p := range byIndex[corev1.Pod](s.pods, byOwner, key) {
			deps = append(deps, dependent{p, "pod", core.Pods(ns).Delete})
		}
		for _, p := range byIndex[corev1.PersistentVolumeClaim](s.pvcs, byOwner, key) {
			deps = append(deps, dependent{p, "volume claim", core.PersistentVolumeClaims(ns).Delete})
		}
		for _, svc := range byIndex[corev1.Service](s.services, byOwner, key) {
			deps = append(deps, dependent{svc, "service", core.Services(ns).Delete})
		}
	} else {
		for _, sb := range s.ownedSandboxes(ns, kind, name) {
			deps = append(deps, dependent{sb, "sandbox", c.opts.Sandboxes.Sandboxes(ns).Delete})
		}
	}
	deps = slices.DeleteFunc(deps, func(d dependent) bool {
		return controlledBy(d.obj, live) || d.obj.GetDeletionTimestamp() != nil
	})
	if len(deps) == 0 {
		return nil
	}
	current, err := c.ownerUID(ctx, kind, ns, name)
	if err != nil {
		return err
	}
	for _, d := range deps {
		if controlledBy(d.obj, current) {
			continue
		}
		uid := d.obj.GetUID()
		err := d.delete(ctx, d.obj.GetName(), metav1.DeleteOptions{
			Preconditions:     &metav1.Preconditions{UID: &uid},
			PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("delete orphaned %s: %w", d.what, err)
		}
		c.log.Info("garbage collected", "namespace", ns, d.what, d.obj.GetName(), "owner_kind", kind, "owner", name)
	}
	return nil
}

// collectLive runs collect for the kind ns/name owner whose cached copy
// is obj (nil once it is gone) and reports whether the owner's sync goes
// on: it exists and is not being deleted.
func collectLive[O any, P interface {
	*O
	metav1.Object
}](ctx context.Context, c *Controller, s *scope, kind, ns, name string, obj P) (bool, error) {
	if obj == nil {
		return false, c.collect(ctx, s, kind, ns, name, "")
	}
	if obj.GetDeletionTimestamp() != nil {
		return false, nil
	}
	return true, c.collect(ctx, s, kind, ns, name, obj.GetUID())
}

// ownerUID reads the owner's UID from the API server; "" when it is gone.
func (c *Controller) ownerUID(ctx context.Context, kind, ns, name string) (types.UID, error) {
	var obj metav1.Object
	var err error
	switch kind {
	case kindSandbox:
		obj, err = c.opts.Sandboxes.Sandboxes(ns).Get(ctx, name, metav1.GetOptions{})
	case kindClaim:
		obj, err = c.opts.Sandboxes.SandboxClaims(ns).Get(ctx, name, metav1.GetOptions{})
	case kindWarmPool:
		obj, err = c.opts.Sandboxes.SandboxWarmPools(ns).Get(ctx, name, metav1.GetOptions{})
	default:
		return "", fmt.Errorf("unknown owner kind %q", kind)
	}
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("get %s %s: %w", kind, name, err)
	}
	return obj.GetUID(), nil
}

// syncVolumeClaim stands in for the pvc-protection controller: a deleted
// claim loses its finalizer once no pod in its namespace uses it, read
// from the API server so the claim never goes while a pod still runs.
func (c *Controller) syncVolumeClaim(ctx context.Context, s *scope, ns, name string) error {
	pvc := s.pvc(ns, name)
	if pvc == nil || pvc.DeletionTimestamp == nil || !slices.Contains(pvc.Finalizers, PVCProtectionFinalizer) {
		return nil
	}
	pods, err := c.opts.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	for _, p := range pods.Items {
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == name {
				return nil // the pod's deletion queues this claim again
			}
		}
	}
	pvc = pvc.DeepCopy()
	pvc.Finalizers = slices.DeleteFunc(pvc.Finalizers, func(f string) bool { return f == PVCProtectionFinalizer })
	if _, err := c.opts.Client.CoreV1().PersistentVolumeClaims(ns).Update(ctx, pvc, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("release volume claim: %w", err)
	}
	return nil
}
