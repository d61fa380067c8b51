package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// Index names of the informer caches.
const (
	byOwner    = "owner"    // <ns>/<controller kind>/<controller name>
	byNode     = "node"     // spec.nodeName of pods
	byTemplate = "template" // <ns>/<template> of pools
	byPool     = "pool"     // <ns>/<pool> of claims
)

func ownerKey(ns, kind, name string) string { return ns + "/" + kind + "/" + name }

func ownerIndex(obj any) ([]string, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	ref := metav1.GetControllerOfNoCopy(o)
	if ref == nil {
		return nil, nil
	}
	return []string{ownerKey(o.GetNamespace(), ref.Kind, ref.Name)}, nil
}

// scope is the set of informers of one watched namespace, or of all
// namespaces. Its caches are read-only: copy an object before changing it.
type scope struct {
	factory   informers.SharedInformerFactory
	sandboxes cache.SharedIndexInformer
	claims    cache.SharedIndexInformer
	pools     cache.SharedIndexInformer
	templates cache.SharedIndexInformer
	pods      cache.SharedIndexInformer
	pvcs      cache.SharedIndexInformer
	services  cache.SharedIndexInformer
}

func newScope(o Options, ns string) (*scope, error) {
	owner := cache.Indexers{byOwner: ownerIndex}
	sc := o.Sandboxes
	f := informers.NewSharedInformerFactoryWithOptions(o.Client, 0, informers.WithNamespace(ns))
	s := &scope{
		factory: f,
		sandboxes: sandboxapi.NewInformer(sc.Sandboxes(ns), &agents.Sandbox{},
			sandboxapi.InformerOptions{Indexers: owner}),
		claims: sandboxapi.NewInformer(sc.SandboxClaims(ns), &extensions.SandboxClaim{},
			sandboxapi.InformerOptions{Indexers: cache.Indexers{byPool: func(obj any) ([]string, error) {
				c := obj.(*extensions.SandboxClaim)
				return []string{c.Namespace + "/" + c.Spec.WarmPoolRef.Name}, nil
			}}}),
		pools: sandboxapi.NewInformer(sc.SandboxWarmPools(ns), &extensions.SandboxWarmPool{},
			sandboxapi.InformerOptions{Indexers: cache.Indexers{byTemplate: func(obj any) ([]string, error) {
				p := obj.(*extensions.SandboxWarmPool)
				return []string{p.Namespace + "/" + p.Spec.SandboxTemplateRef.Name}, nil
			}}}),
		templates: sandboxapi.NewInformer(sc.SandboxTemplates(ns), &extensions.SandboxTemplate{}, sandboxapi.InformerOptions{}),
		pods:      f.Core().V1().Pods().Informer(),
		pvcs:      f.Core().V1().PersistentVolumeClaims().Informer(),
		services:  f.Core().V1().Services().Informer(),
	}
	err := errors.Join(
		s.pods.AddIndexers(cache.Indexers{byOwner: ownerIndex, byNode: func(obj any) ([]string, error) {
			return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
		}}),
		s.pvcs.AddIndexers(owner),
		s.services.AddIndexers(owner),
	)
	if err != nil {
		return nil, fmt.Errorf("index caches: %w", err)
	}
	return s, nil
}

// run starts the informers and returns their sync checks; the informers
// stop when ctx ends, the factory's at shutdown.
func (s *scope) run(ctx context.Context, goRun func(func())) []cache.InformerSynced {
	s.factory.Start(ctx.Done())
	var synced []cache.InformerSynced
	for _, inf := range []cache.SharedIndexInformer{s.sandboxes, s.claims, s.pools, s.templates} {
		goRun(func() { inf.RunWithContext(ctx) })
		synced = append(synced, inf.HasSynced)
	}
	return append(synced, s.pods.HasSynced, s.pvcs.HasSynced, s.services.HasSynced)
}

func get[T any](inf cache.SharedIndexInformer, ns, name string) *T {
	obj, ok, err := inf.GetIndexer().GetByKey(ns + "/" + name)
	if err != nil || !ok {
		return nil
	}
	t, _ := obj.(*T)
	return t
}

func byIndex[T any](inf cache.SharedIndexInformer, index, value string) []*T {
	objs, err := inf.GetIndexer().ByIndex(index, value)
	if err != nil {
		return nil
	}
	out := make([]*T, 0, len(objs))
	for _, obj := range objs {
		if t, ok := obj.(*T); ok {
			out = append(out, t)
		}
	}
	// Index order is map order; sort for stable decisions.
	slices.SortFunc(out, func(a, b *T) int {
		return strings.Compare(any(a).(metav1.Object).GetName(), any(b).(metav1.Object).GetName())
	})
	return out
}

func (s *scope) sandbox(ns, name string) *agents.Sandbox {
	return get[agents.Sandbox](s.sandboxes, ns, name)
}

func (s *scope) claim(ns, name string) *extensions.SandboxClaim {
	return get[extensions.SandboxClaim](s.claims, ns, name)
}

func (s *scope) pool(ns, name string) *extensions.SandboxWarmPool {
	return get[extensions.SandboxWarmPool](s.pools, ns, name)
}

func (s *scope) template(ns, name string) *extensions.SandboxTemplate {
	return get[extensions.SandboxTemplate](s.templates, ns, name)
}

func (s *scope) pvc(ns, name string) *corev1.PersistentVolumeClaim {
	return get[corev1.PersistentVolumeClaim](s.pvcs, ns, name)
}

func (s *scope) service(ns, name string) *corev1.Service {
	return get[corev1.Service](s.services, ns, name)
}

// ownedService is the Sandbox's Service from the cache, if this
// incarnation of the Sandbox controls it.
func (s *scope) ownedService(sb *agents.Sandbox) *corev1.Service {
	if svc := s.service(sb.Namespace, sb.Name); svc != nil && controlledBy(svc, sb.UID) {
		return svc
	}
	return nil
}

// ownedPods are the pods whose controller is the Sandbox ns/name, of any
// incarnation; callers check the UID.
func (s *scope) ownedPods(ns, name string) []*corev1.Pod {
	return byIndex[corev1.Pod](s.pods, byOwner, ownerKey(ns, kindSandbox, name))
}

// ownedSandboxes are the Sandboxes whose controller is kind ns/name.
func (s *scope) ownedSandboxes(ns, kind, name string) []*agents.Sandbox {
	return byIndex[agents.Sandbox](s.sandboxes, byOwner, ownerKey(ns, kind, name))
}
