package controller

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// syncPool keeps spec.replicas spares of a SandboxWarmPool and reports
// them in its status. Spares are listed from the API server rather than
// the cache, so a spare created a moment ago is never created twice.
func (c *Controller) syncPool(ctx context.Context, s *scope, ns, name string) (time.Duration, error) {
	pool := s.pool(ns, name)
	if live, err := collectLive(ctx, c, s, kindWarmPool, ns, name, pool); !live || err != nil {
		return 0, err
	}
	client := c.opts.Sandboxes.Sandboxes(ns)
	list, err := client.List(ctx, metav1.ListOptions{LabelSelector: agents.LabelWarmPoolSandbox + "=" + NameHash(pool.Name)})
	if err != nil {
		return 0, fmt.Errorf("list spares: %w", err)
	}
	var spares []*agents.Sandbox
	for i := range list.Items {
		if sb := &list.Items[i]; isSpare(sb, pool) {
			spares = append(spares, sb)
		}
	}

	want := int(pool.Spec.Replicas)
	if tmpl := s.template(ns, pool.Spec.SandboxTemplateRef.Name); tmpl != nil {
		for len(spares) < want {
			created, err := client.Create(ctx, newSpare(pool, tmpl), metav1.CreateOptions{})
			if err != nil {
				return 0, fmt.Errorf("create spare: %w", err)
			}
			c.log.Info("spare created", "namespace", ns, "pool", name, "sandbox", created.Name)
			spares = append(spares, created)
		}
	}
	if len(spares) > want {
		slices.SortFunc(spares, spareOrder)
		for _, sb := range spares[:len(spares)-want] {
			err := client.Delete(ctx, sb.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &sb.UID}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return 0, fmt.Errorf("delete surplus spare: %w", err)
			}
		}
		spares = spares[len(spares)-want:]
	}

	status := extensions.SandboxWarmPoolStatus{
		Replicas:           int32(len(spares)),
		Selector:           agents.LabelWarmPoolSandbox + "=" + NameHash(pool.Name),
		ObservedGeneration: pool.Generation,
	}
	for _, sb := range spares {
		if meta.IsStatusConditionTrue(sb.Status.Conditions, agents.ConditionReady) {
			status.ReadyReplicas++
		}
	}
	if status == pool.Status {
		return 0, nil
	}
	updated := pool.DeepCopy()
	updated.Status = status
	if _, err := c.opts.Sandboxes.SandboxWarmPools(ns).UpdateStatus(ctx, updated, metav1.UpdateOptions{}); err != nil {
		return 0, fmt.Errorf("update pool status: %w", err)
	}
	return 0, nil
}
