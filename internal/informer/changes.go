package informer

import (
	"context"
	"fmt"

	"k8s.io/client-go/tools/cache"
)

// addHandlers turns informer events into the change callbacks and wakes
// WaitReady callers.
func (x *Index) addHandlers() error {
	handlers := []struct {
		inf cache.SharedIndexInformer
		h   cache.ResourceEventHandlerFuncs
	}{
		{x.claims, cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { x.notify() },
			UpdateFunc: func(_, _ any) { x.notify() },
			DeleteFunc: func(obj any) {
				if c, ok := unwrap[*claimEntry](obj); ok && c.user != "" {
					x.opts.OnUserGone(c.user)
				}
				x.notify()
			},
		}},
		{x.sandboxes, cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { x.notify() },
			UpdateFunc: func(oldObj, newObj any) {
				o, ok1 := unwrap[*sandboxEntry](oldObj)
				n, ok2 := unwrap[*sandboxEntry](newObj)
				if ok1 && ok2 {
					if n.suspended && !o.suspended {
						x.forgetPodNamed(o.pod)
						x.forgetPodNamed(n.pod)
					} else if o.pod != "" && o.pod != n.pod {
						x.forgetPodNamed(o.pod)
					}
				}
				x.notify()
			},
			DeleteFunc: func(obj any) {
				if s, ok := unwrap[*sandboxEntry](obj); ok {
					x.forgetPodNamed(s.pod)
				}
				x.notify()
			},
		}},
		{x.pods, cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { x.notify() },
			UpdateFunc: func(oldObj, newObj any) {
				o, ok1 := unwrap[*podEntry](oldObj)
				n, ok2 := unwrap[*podEntry](newObj)
				if ok1 && ok2 {
					if o.uid != n.uid {
						x.forgetPod(o.uid)
					}
					if n.terminating && !o.terminating {
						x.forgetPod(n.uid)
					}
				}
				x.notify()
			},
			DeleteFunc: func(obj any) {
				if p, ok := unwrap[*podEntry](obj); ok {
					x.forgetPod(p.uid)
				}
				x.notify()
			},
		}},
		{x.nodes, cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { x.notify() },
			UpdateFunc: func(_, _ any) { x.notify() },
			DeleteFunc: func(any) { x.notify() },
		}},
	}
	for _, h := range handlers {
		if _, err := h.inf.AddEventHandler(h.h); err != nil {
			return fmt.Errorf("add informer handler: %w", err)
		}
	}
	return nil
}

// forgetPodNamed reports the UID of this node's pod called name as gone.
func (x *Index) forgetPodNamed(name string) {
	if name == "" {
		return
	}
	if p, ok := get[*podEntry](x.pods, x.opts.Namespace+"/"+name); ok {
		x.forgetPod(p.uid)
	}
}

func (x *Index) forgetPod(uid string) {
	if uid != "" {
		x.opts.OnPodGone(uid)
	}
}

// unwrap returns the entry of an event object or of a deletion tombstone.
func unwrap[T any](obj any) (T, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	e, ok := obj.(T)
	return e, ok
}

// notify wakes every WaitReady caller to look again.
func (x *Index) notify() {
	x.mu.Lock()
	close(x.changed)
	x.changed = make(chan struct{})
	x.mu.Unlock()
}

func (x *Index) changes() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.changed
}

// WaitReady returns user's entry once its route is StateReady, waiting for
// informer events (no polling) until then. It returns early with the
// Lookup error when the account is missing or invalid, or with ctx's cause
// when ctx ends first; the last entry seen is returned with that error.
func (x *Index) WaitReady(ctx context.Context, user string) (Entry, error) {
	for {
		ch := x.changes()
		e, err := x.Lookup(user)
		if err != nil || e.Route.State == StateReady {
			return e, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return e, fmt.Errorf("wait for sandbox: %w", context.Cause(ctx))
		}
	}
}
