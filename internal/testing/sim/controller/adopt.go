package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// fromTemplate is a new Running Sandbox with the template's pod template,
// volume claim templates and service setting.
func fromTemplate(tmpl *extensions.SandboxTemplate) *agents.Sandbox {
	spec := tmpl.Spec.DeepCopy()
	return &agents.Sandbox{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: tmpl.Namespace,
			Labels: map[string]string{
				agents.LabelTemplateRefHash: NameHash(tmpl.Name),
				agents.LabelCreatedBy:       CreatedBy,
			},
		},
		Spec: agents.SandboxSpec{
			OperatingMode:        agents.OperatingModeRunning,
			PodTemplate:          spec.PodTemplate,
			VolumeClaimTemplates: spec.VolumeClaimTemplates,
			Service:              spec.Service,
		},
	}
}

// isSpare reports whether sb is an unclaimed Sandbox of pool.
func isSpare(sb *agents.Sandbox, pool *extensions.SandboxWarmPool) bool {
	return sb.Labels[agents.LabelWarmPoolSandbox] == NameHash(pool.Name) &&
		controlledBy(sb, pool.UID) && sb.DeletionTimestamp == nil
}

// readySpare picks the oldest Ready, running spare of pool, or nil.
func (c *Controller) readySpare(s *scope, pool *extensions.SandboxWarmPool) *agents.Sandbox {
	var ready []*agents.Sandbox
	for _, sb := range s.ownedSandboxes(pool.Namespace, kindWarmPool, pool.Name) {
		if isSpare(sb, pool) && operatingMode(sb) == agents.OperatingModeRunning && meta.IsStatusConditionTrue(sb.Status.Conditions, agents.ConditionReady) {
			ready = append(ready, sb)
		}
	}
	if len(ready) == 0 {
		return nil
	}
	return slices.MinFunc(ready, func(a, b *agents.Sandbox) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// adopt hands a spare to claim: the pool labels go, launch-type=warm and
// claim-uid arrive, the controller reference moves from the pool to the
// claim and the claim's additionalPodMetadata joins the pod template (the
// Sandbox reconcile then patches the running pod). The update carries the
// cached resourceVersion, so two claims never adopt the same spare.
func (c *Controller) adopt(ctx context.Context, claim *extensions.SandboxClaim, spare *agents.Sandbox) (*agents.Sandbox, error) {
	sb := spare.DeepCopy()
	delete(sb.Labels, agents.LabelWarmPoolSandbox)
	sb.Labels[agents.LabelLaunchType] = agents.LaunchTypeWarm
	sb.Labels[agents.LabelClaimUID] = string(claim.UID)
	delete(sb.Spec.PodTemplate.Metadata.Labels, agents.LabelWarmPoolSandbox)
	mergePodMetadata(&sb.Spec.PodTemplate.Metadata, claim.Spec.AdditionalPodMetadata)
	setController(sb, claimRef(claim))
	if c.opts.Release == ReleaseV05 {
		// v0.5.6 records the pod's name before the adopted Sandbox can be
		// seen Ready (upstream sandboxclaim_controller.go completeAdoption).
		mergeInto(&sb.Annotations, map[string]string{agents.AnnotationPodName: sb.Name})
	}
	updated, err := c.opts.Sandboxes.Sandboxes(sb.Namespace).Update(ctx, sb, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("adopt sandbox %s: %w", sb.Name, err)
	}
	return updated, nil
}

// createCold creates a Sandbox named after the claim, controlled by it.
func (c *Controller) createCold(ctx context.Context, claim *extensions.SandboxClaim, tmpl *extensions.SandboxTemplate) (*agents.Sandbox, error) {
	sb := fromTemplate(tmpl)
	sb.Name = claim.Name
	sb.Labels[agents.LabelLaunchType] = agents.LaunchTypeCold
	sb.Labels[agents.LabelClaimUID] = string(claim.UID)
	sb.OwnerReferences = []metav1.OwnerReference{claimRef(claim)}
	mergePodMetadata(&sb.Spec.PodTemplate.Metadata, claim.Spec.AdditionalPodMetadata)
	inject(sb, claim) // checkInjection has passed
	client := c.opts.Sandboxes.Sandboxes(claim.Namespace)
	created, err := client.Create(ctx, sb, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		existing, gerr := client.Get(ctx, sb.Name, metav1.GetOptions{})
		if gerr == nil && controlledBy(existing, claim.UID) {
			return existing, nil
		}
		// A Sandbox of an older claim of the same name: the garbage
		// collection removes it first.
		return nil, fmt.Errorf("create sandbox %s: %w", sb.Name, errRetry)
	}
	if err != nil {
		return nil, fmt.Errorf("create sandbox %s: %w", sb.Name, err)
	}
	c.log.Info("sandbox created cold", "namespace", claim.Namespace, "claim", claim.Name)
	return created, nil
}

// newSpare is a spare Sandbox for pool: generated name <pool>-xxxxx, the
// pool label on the Sandbox and its pod template, controlled by the pool.
func newSpare(pool *extensions.SandboxWarmPool, tmpl *extensions.SandboxTemplate) *agents.Sandbox {
	sb := fromTemplate(tmpl)
	sb.GenerateName = pool.Name + "-"
	hash := NameHash(pool.Name)
	sb.Labels[agents.LabelWarmPoolSandbox] = hash
	mergeInto(&sb.Spec.PodTemplate.Metadata.Labels, map[string]string{agents.LabelWarmPoolSandbox: hash})
	sb.OwnerReferences = []metav1.OwnerReference{poolRef(pool)}
	return sb
}

// spareOrder sorts spares for removal when a pool shrinks: not Ready
// first, then newest first.
func spareOrder(a, b *agents.Sandbox) int {
	ra, rb := meta.IsStatusConditionTrue(a.Status.Conditions, agents.ConditionReady), meta.IsStatusConditionTrue(b.Status.Conditions, agents.ConditionReady)
	if ra != rb {
		if ra {
			return 1
		}
		return -1
	}
	return b.CreationTimestamp.Compare(a.CreationTimestamp.Time)
}
