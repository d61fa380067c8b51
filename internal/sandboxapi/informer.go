package sandboxapi

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// ListWatcher is the part of a typed client an informer needs.
type ListWatcher[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// InformerOptions narrow and shape what an informer keeps.
type InformerOptions struct {
	// Tweak edits list and watch options, e.g. to add a label selector.
	Tweak func(*metav1.ListOptions)
	// Transform strips objects before they are stored (see Keep).
	Transform cache.TransformFunc
	Resync    time.Duration
	Indexers  cache.Indexers
}

// NewInformer builds a shared index informer over a typed client; example is
// an empty object of the listed kind.
func NewInformer[L runtime.Object](lw ListWatcher[L], example runtime.Object, opts InformerOptions) cache.SharedIndexInformer {
	tweak := func(o *metav1.ListOptions) {
		if opts.Tweak != nil {
			opts.Tweak(o)
		}
	}
	inf := cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			tweak(&o)
			return lw.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			tweak(&o)
			return lw.Watch(ctx, o)
		},
	}, example, cache.SharedIndexInformerOptions{ResyncPeriod: opts.Resync, Indexers: opts.Indexers})
	if opts.Transform != nil {
		_ = inf.SetTransform(opts.Transform)
	}
	return inf
}

// Keep is a Transform that stores what keep makes of each *T. Anything
// else passes as it is: a tombstone, or an object the informer already
// transformed.
func Keep[T any](keep func(*T) any) cache.TransformFunc {
	return func(obj any) (any, error) {
		if o, ok := obj.(*T); ok {
			return keep(o), nil
		}
		return obj, nil
	}
}
