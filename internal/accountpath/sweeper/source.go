package sweeper

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// lister is where a sweep reads Sandboxes and claims: informer caches in
// production, fixed lists in unit tests. Returned objects are read-only.
type lister interface {
	Sandboxes() []*agents.Sandbox
	// Sandbox returns the Sandbox name of the sweeper's namespace.
	Sandbox(name string) (*agents.Sandbox, bool)
	Claims() []*extensions.SandboxClaim
}

// patcher suspends or wakes one Sandbox, failing with a conflict when it is
// no longer at resourceVersion.
type patcher interface {
	Suspend(ctx context.Context, name, resourceVersion string) error
	Wake(ctx context.Context, name, resourceVersion string) error
}

// caches lists from the sweeper's two informers.
type caches struct {
	ns                string
	sandboxes, claims cache.SharedIndexInformer
}

func newCaches(o Options) caches {
	return caches{
		ns:        o.Namespace,
		sandboxes: sandboxapi.NewInformer(o.Sandboxes, &agents.Sandbox{}, sandboxapi.InformerOptions{Transform: sandboxapi.Keep(slimSandbox)}),
		claims:    sandboxapi.NewInformer(o.Claims, &extensions.SandboxClaim{}, sandboxapi.InformerOptions{Transform: sandboxapi.Keep(slimClaim)}),
	}
}

func (c caches) Sandboxes() []*agents.Sandbox { return listOf[*agents.Sandbox](c.sandboxes) }

func (c caches) Sandbox(name string) (*agents.Sandbox, bool) {
	obj, ok, err := c.sandboxes.GetStore().GetByKey(c.ns + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	sb, ok := obj.(*agents.Sandbox)
	return sb, ok
}

func (c caches) Claims() []*extensions.SandboxClaim {
	return listOf[*extensions.SandboxClaim](c.claims)
}

func listOf[T any](inf cache.SharedIndexInformer) []T {
	objs := inf.GetStore().List()
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// slimMeta keeps the metadata the rules read, of the annotations only
// those named.
func slimMeta(m metav1.ObjectMeta, annotations ...string) metav1.ObjectMeta {
	var kept map[string]string
	for _, a := range annotations {
		if v, ok := m.Annotations[a]; ok {
			if kept == nil {
				kept = make(map[string]string, len(annotations))
			}
			kept[a] = v
		}
	}
	return metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Labels: m.Labels, Annotations: kept, DeletionTimestamp: m.DeletionTimestamp,
	}
}

// slimSandbox keeps mode, conditions, ownership, the pod's name and node
// and when it was created; pod templates are large.
func slimSandbox(sb *agents.Sandbox) any {
	m := slimMeta(sb.ObjectMeta, agents.AnnotationPodName)
	m.CreationTimestamp = sb.CreationTimestamp
	return &agents.Sandbox{
		ObjectMeta: m,
		Spec:       agents.SandboxSpec{OperatingMode: sb.Spec.OperatingMode},
		Status:     agents.SandboxStatus{Conditions: sb.Status.Conditions, NodeName: sb.Status.NodeName},
	}
}

// slimClaim keeps the managed-by label, what points at the Sandbox and the
// owner's keep-awake and wake schedule.
func slimClaim(c *extensions.SandboxClaim) any {
	return &extensions.SandboxClaim{
		ObjectMeta: slimMeta(c.ObjectMeta, extensions.AnnotationSandboxName, account.AnnotationKeepAwakeUntil, account.AnnotationWakeSchedule),
		Status:     extensions.SandboxClaimStatus{Sandbox: extensions.ClaimedSandbox{Name: c.Status.Sandbox.Name}},
	}
}

// clientPatcher suspends and wakes through the API server.
type clientPatcher struct{ c SandboxClient }

// modePatch is the merge patch body; the resourceVersion makes it
// conditional.
type modePatch struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Spec struct {
		OperatingMode agents.OperatingMode `json:"operatingMode"`
	} `json:"spec"`
}

func (p clientPatcher) Suspend(ctx context.Context, name, resourceVersion string) error {
	return p.mode(ctx, name, resourceVersion, agents.OperatingModeSuspended)
}

func (p clientPatcher) Wake(ctx context.Context, name, resourceVersion string) error {
	return p.mode(ctx, name, resourceVersion, agents.OperatingModeRunning)
}

func (p clientPatcher) mode(ctx context.Context, name, resourceVersion string, mode agents.OperatingMode) error {
	var body modePatch
	body.Metadata.ResourceVersion = resourceVersion
	body.Spec.OperatingMode = mode
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("encode mode patch: %w", err)
	}
	if _, err := p.c.Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("patch sandbox %s: %w", name, err)
	}
	return nil
}
