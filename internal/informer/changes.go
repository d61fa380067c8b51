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
			AddFunc: func(obj any) {
				x.notify()
				x.accountChanged(obj, nil)
			},
			UpdateFunc: func(oldObj, newObj any) {
				x.notify()
				x.accountChanged(oldObj, newObj)
			},
			DeleteFunc: func(obj any) {
				if c, ok := unwrap[*claimEntry](obj); ok && c.user != "" {
					x.opts.OnUserGone(c.user)
				}
				x.notify()
				x.accountChanged(obj, nil)
			},
		}},
		{x.sandboxes, entryHandlers(x.notify,
			func(o, n *sandboxEntry) {
				if n.suspended && !o.suspended {
					x.forgetPodsOf(n.uid)
				}
			},
			func(s *sandboxEntry) { x.forgetPodsOf(s.uid) })},
		{x.pods, entryHandlers(x.notify,
			func(o, n *podEntry) {
				if o.uid != n.uid {
					x.forgetPod(o.uid)
				}
				if n.terminating && !o.terminating {
					x.forgetPod(n.uid)
				}
			},
			func(p *podEntry) { x.forgetPod(p.uid) })},
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

// entryHandlers calls updated with both entries of an update and deleted
// with the entry of a deletion, then notify, which every event ends with.
func entryHandlers[E any](notify func(), updated func(o, n E), deleted func(E)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { notify() },
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := unwrap[E](oldObj)
			n, ok2 := unwrap[E](newObj)
			if ok1 && ok2 {
				updated(o, n)
			}
			notify()
		},
		DeleteFunc: func(obj any) {
			if e, ok := unwrap[E](obj); ok {
				deleted(e)
			}
			notify()
		},
	}
}

// forgetPodsOf reports the pods on this node that the Sandbox with uid
// controls as gone.
func (x *Index) forgetPodsOf(uid string) {
	for _, p := range x.ownedPods(uid) {
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

// WaitReady returns user's entry once its route is StateReady on a node
// other than away ("": on any node), or StateInvalid, which no wait mends.
// It is WaitRoute with that condition.
func (x *Index) WaitReady(ctx context.Context, user, away string) (Entry, error) {
	return x.WaitRoute(ctx, user, func(r Route) bool { return r.Routable(away) || r.State == StateInvalid })
}

// WaitRoute returns user's entry once done holds for its route, waiting
// for informer events (no polling) until then. It returns early with the
// Lookup error when the account is missing or invalid, or with ctx's
// cause when ctx ends first; the last entry seen is returned with that
// error.
func (x *Index) WaitRoute(ctx context.Context, user string, done func(Route) bool) (Entry, error) {
	for {
		ch := x.changes()
		e, err := x.Lookup(user)
		if err != nil || done(e.Route) {
			return e, err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return e, fmt.Errorf("wait for sandbox: %w", context.Cause(ctx))
		}
	}
}

// accountWatch is one WatchAccount subscription.
type accountWatch struct{ fn func() }

// WatchAccount calls changed after every add, update or delete of user's
// claim is in the cache (so Lookup sees it), until stop is called. The
// node proxy re-checks the sessions of its open WebSockets and streams
// with it. changed runs on the informer's goroutine: it must not block.
func (x *Index) WatchAccount(user string, changed func()) (stop func()) {
	w := &accountWatch{fn: changed}
	x.watchMu.Lock()
	if x.watches == nil {
		x.watches = map[string]map[*accountWatch]struct{}{}
	}
	set := x.watches[user]
	if set == nil {
		set = map[*accountWatch]struct{}{}
		x.watches[user] = set
	}
	set[w] = struct{}{}
	x.watchMu.Unlock()
	return func() {
		x.watchMu.Lock()
		defer x.watchMu.Unlock()
		if set := x.watches[user]; set != nil {
			delete(set, w)
			if len(set) == 0 {
				delete(x.watches, user)
			}
		}
	}
}

// accountChanged calls the watchers of the users whose claim an event
// touched: the user of each entry (of a tombstone too), once each.
func (x *Index) accountChanged(objs ...any) {
	var users [2]string
	n := 0
	for _, obj := range objs {
		c, ok := unwrap[*claimEntry](obj)
		if !ok || c.user == "" || (n == 1 && users[0] == c.user) {
			continue
		}
		users[n] = c.user
		n++
	}
	var fns []func()
	x.watchMu.Lock()
	for _, u := range users[:n] {
		for w := range x.watches[u] {
			fns = append(fns, w.fn)
		}
	}
	x.watchMu.Unlock()
	for _, fn := range fns {
		fn()
	}
}
