// Package feed stands in for the API server behind a node proxy's informer
// caches: static list-watchers that hand the informer.Index a fixed set of
// claims, Sandboxes, pods and nodes, built the way the auth API and the
// controller would write them. The Index code (transforms, stores,
// lookups) is the production code; only the transport is replaced.
package feed

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// Object is a Kubernetes object with metadata.
type Object interface {
	runtime.Object
	metav1.Object
}

// List serves one fixed list, to a List call or as the initial events of
// a watch-list stream (the reflector's default), and then a watch that
// never sends another event.
type List[L runtime.Object] struct {
	mu    sync.Mutex
	list  L
	empty L
	// bookmark returns an empty object of the listed kind, for the
	// bookmark that ends the initial events.
	bookmark func() Object
}

// NewList serves list; after Drop it serves empty.
func NewList[L runtime.Object](list, empty L, bookmark func() Object) *List[L] {
	return &List[L]{list: list, empty: empty, bookmark: bookmark}
}

// List returns the list.
func (l *List[L]) List(context.Context, metav1.ListOptions) (L, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.list, nil
}

// Watch returns a watch that stays open until stopped. Asked for initial
// events, it first sends every listed object and the bookmark that ends
// them, as the API server does.
func (l *List[L]) Watch(_ context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if opts.SendInitialEvents == nil || !*opts.SendInitialEvents {
		return watch.NewFake(), nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	objs, err := meta.ExtractList(l.list)
	if err != nil {
		return nil, fmt.Errorf("extract list: %w", err)
	}
	w := watch.NewFakeWithChanSize(len(objs)+1, false)
	for _, o := range objs {
		w.Add(o)
	}
	bm := l.bookmark()
	bm.SetResourceVersion("1")
	bm.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	w.Action(watch.Bookmark, bm)
	return w, nil
}

// Drop releases the list once the informer has synced, so that it does not
// count against the memory the caches take.
func (l *List[L]) Drop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = l.empty
}
