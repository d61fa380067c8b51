package controller

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func (c *Controller) enqueue(k kind, obj metav1.Object) {
	c.queue.Add(item{kind: k, namespace: obj.GetNamespace(), name: obj.GetName()})
}

// enqueueOwner queues the controller of obj when it is one we reconcile.
func (c *Controller) enqueueOwner(obj metav1.Object) {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil {
		return
	}
	it := item{namespace: obj.GetNamespace(), name: ref.Name}
	switch ref.Kind {
	case kindSandbox:
		it.kind = sandboxItem
	case kindClaim:
		it.kind = claimItem
	case kindWarmPool:
		it.kind = poolItem
	default:
		return
	}
	c.queue.Add(it)
}

func (c *Controller) enqueueAllSandboxes() {
	for _, s := range c.scopes {
		for _, obj := range s.sandboxes.GetIndexer().List() {
			c.enqueue(sandboxItem, obj.(metav1.Object))
		}
	}
}

// handler calls f with the object of every event, tombstones unwrapped.
func handler(f func(obj metav1.Object, deleted bool)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { call(f, obj, false) },
		UpdateFunc: func(_, obj any) { call(f, obj, false) },
		DeleteFunc: func(obj any) { call(f, obj, true) },
	}
}

func call(f func(metav1.Object, bool), obj any, deleted bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if o, ok := obj.(metav1.Object); ok {
		f(o, deleted)
	}
}

// watch routes each informer's events to the items they affect.
func (c *Controller) watch(s *scope) error {
	add := func(inf cache.SharedIndexInformer, f func(metav1.Object, bool)) error {
		_, err := inf.AddEventHandler(handler(f))
		return err
	}
	return errors.Join(
		add(s.sandboxes, func(o metav1.Object, deleted bool) {
			if deleted {
				c.forget(o.GetUID())
			}
			c.enqueue(sandboxItem, o)
			c.enqueueOwner(o)
		}),
		// An adopted spare leaves its pool, which must replenish.
		func() error {
			_, err := s.sandboxes.AddEventHandler(cache.ResourceEventHandlerFuncs{
				UpdateFunc: func(old, _ any) { call(func(o metav1.Object, _ bool) { c.enqueueOwner(o) }, old, false) },
			})
			return err
		}(),
		add(s.claims, func(o metav1.Object, deleted bool) {
			if deleted {
				c.doneWaiting(o.GetUID())
			}
			c.enqueue(claimItem, o)
		}),
		add(s.pools, func(o metav1.Object, _ bool) {
			c.enqueue(poolItem, o)
			claims, _ := s.claims.GetIndexer().ByIndex(byPool, o.GetNamespace()+"/"+o.GetName())
			for _, cl := range claims {
				c.enqueue(claimItem, cl.(metav1.Object))
			}
		}),
		add(s.templates, func(o metav1.Object, _ bool) {
			objs, _ := s.pools.GetIndexer().ByIndex(byTemplate, o.GetNamespace()+"/"+o.GetName())
			for _, p := range objs {
				c.enqueue(poolItem, p.(metav1.Object))
				claims, _ := s.claims.GetIndexer().ByIndex(byPool, o.GetNamespace()+"/"+p.(metav1.Object).GetName())
				for _, cl := range claims {
					c.enqueue(claimItem, cl.(metav1.Object))
				}
			}
		}),
		add(s.pods, func(o metav1.Object, deleted bool) {
			c.enqueueOwner(o)
			if pod, ok := o.(*corev1.Pod); ok && deleted {
				for _, v := range pod.Spec.Volumes {
					if v.PersistentVolumeClaim != nil {
						c.queue.Add(item{kind: pvcItem, namespace: pod.Namespace, name: v.PersistentVolumeClaim.ClaimName})
					}
				}
			}
		}),
		add(s.pvcs, func(o metav1.Object, _ bool) {
			c.enqueueOwner(o)
			if o.GetDeletionTimestamp() != nil {
				c.enqueue(pvcItem, o)
			}
		}),
		add(s.services, func(o metav1.Object, _ bool) { c.enqueueOwner(o) }),
	)
}
