package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// claimResult is what binding a claim to a Sandbox produced: the Sandbox,
// or the Ready condition that explains why there is none.
type claimResult struct {
	sandbox *agents.Sandbox
	reason  string // claim-side Ready reason when sandbox is nil
	message string
	after   time.Duration // retry after, e.g. while an adoption delay runs
}

// syncClaim binds a claim to a Sandbox (adopting a Ready spare of its
// warm pool, or creating one named after the claim) and mirrors the
// Sandbox's Ready condition and pod IPs into the claim's status.
func (c *Controller) syncClaim(ctx context.Context, s *scope, ns, name string) (time.Duration, error) {
	cached := s.claim(ns, name)
	if live, err := collectLive(ctx, c, s, kindClaim, ns, name, cached); !live || err != nil {
		return 0, err
	}
	res, err := c.bind(ctx, s, cached)
	if err != nil {
		return 0, err
	}
	claim := cached
	if res.sandbox != nil && cached.Annotations[extensions.AnnotationSandboxName] != res.sandbox.Name {
		if claim, err = c.annotateClaim(ctx, cached, res.sandbox.Name); err != nil {
			return 0, err
		}
	}
	if err := c.writeClaimStatus(ctx, claim, res); err != nil {
		return 0, err
	}
	return res.after, nil
}

// bind finds or makes the claim's Sandbox.
func (c *Controller) bind(ctx context.Context, s *scope, claim *extensions.SandboxClaim) (claimResult, error) {
	ns := claim.Namespace
	if r := checkMetadata(claim.Spec.AdditionalPodMetadata); r.reason != "" {
		return claimResult{reason: r.reason, message: r.message}, nil
	}
	if name := boundName(claim); name != "" {
		sb := s.sandbox(ns, name)
		if sb == nil || !controlledBy(sb, claim.UID) {
			// The cache may lag behind an adoption or creation.
			live, err := c.opts.Sandboxes.Sandboxes(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return claimResult{}, fmt.Errorf("get sandbox: %w", err)
			}
			if err != nil || !controlledBy(live, claim.UID) {
				return claimResult{reason: extensions.ReasonSandboxMissing, message: "Sandbox " + name + " does not exist"}, nil
			}
			sb = live
		}
		return claimResult{sandbox: sb}, nil
	}
	// An adoption or creation that happened before the annotation.
	for _, sb := range s.ownedSandboxes(ns, kindClaim, claim.Name) {
		if controlledBy(sb, claim.UID) && sb.DeletionTimestamp == nil {
			return claimResult{sandbox: sb}, nil
		}
	}
	pool := s.pool(ns, claim.Spec.WarmPoolRef.Name)
	if pool == nil {
		return claimResult{reason: extensions.ReasonWarmPoolNotFound,
			message: "SandboxWarmPool " + claim.Spec.WarmPoolRef.Name + " not found"}, nil
	}
	tmpl := s.template(ns, pool.Spec.SandboxTemplateRef.Name)
	if tmpl == nil {
		return claimResult{reason: agents.ReasonReconcilerError,
			message: "SandboxTemplate " + pool.Spec.SandboxTemplateRef.Name + " not found"}, nil
	}
	if r := checkInjection(claim, tmpl); r.reason != "" {
		return claimResult{reason: r.reason, message: r.message}, nil
	}
	// A spare's pod is already running, so claims that change its env or
	// volumes start cold.
	if len(claim.Spec.Env) == 0 && len(claim.Spec.VolumeClaimTemplates) == 0 {
		if spare := c.readySpare(s, pool); spare != nil {
			if left := c.waitLeft(claim.UID, c.opts.Delays.WarmAdoption); left > 0 {
				return claimResult{reason: agents.ReasonDependenciesNotReady,
					message: "adopting a warm Sandbox", after: left}, nil
			}
			sb, err := c.adopt(ctx, claim, spare)
			if err != nil {
				return claimResult{}, err
			}
			c.doneWaiting(claim.UID)
			c.log.Info("spare adopted", "namespace", ns, "claim", claim.Name, "sandbox", sb.Name)
			return claimResult{sandbox: sb}, nil
		}
	}
	c.doneWaiting(claim.UID)
	sb, err := c.createCold(ctx, claim, tmpl)
	if err != nil {
		return claimResult{}, err
	}
	return claimResult{sandbox: sb}, nil
}

// boundName is the Sandbox a claim has been bound to, if any.
func boundName(claim *extensions.SandboxClaim) string {
	if name := claim.Annotations[extensions.AnnotationSandboxName]; name != "" {
		return name
	}
	return claim.Status.Sandbox.Name
}

// annotateClaim records the bound Sandbox in the claim's annotation.
func (c *Controller) annotateClaim(ctx context.Context, claim *extensions.SandboxClaim, sandbox string) (*extensions.SandboxClaim, error) {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{extensions.AnnotationSandboxName: sandbox},
	}})
	if err != nil {
		return nil, fmt.Errorf("encode claim annotation: %w", err)
	}
	updated, err := c.opts.Sandboxes.SandboxClaims(claim.Namespace).Patch(ctx, claim.Name, types.MergePatchType, body, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("annotate claim: %w", err)
	}
	return updated, nil
}

// writeClaimStatus mirrors the Sandbox into the claim's status.
func (c *Controller) writeClaimStatus(ctx context.Context, claim *extensions.SandboxClaim, res claimResult) error {
	want := claim.DeepCopy()
	st := &want.Status
	gen := claim.Generation
	if sb := res.sandbox; sb != nil {
		st.Sandbox = extensions.ClaimedSandbox{Name: sb.Name, PodIPs: sb.Status.PodIPs}
		if r := findCondition(sb.Status.Conditions, agents.ConditionReady); r != nil {
			setCondition(&st.Conditions, gen, agents.ConditionReady, r.Status, r.Reason, r.Message)
		} else {
			setCondition(&st.Conditions, gen, agents.ConditionReady, metav1.ConditionFalse,
				agents.ReasonDependenciesNotReady, "Sandbox has no status yet")
		}
		// Finished is the Sandbox's, as it is (upstream
		// sandboxclaim_controller.go syncFinishedCondition).
		if f := findCondition(sb.Status.Conditions, agents.ConditionFinished); f != nil {
			meta.SetStatusCondition(&st.Conditions, *f)
		} else {
			meta.RemoveStatusCondition(&st.Conditions, agents.ConditionFinished)
		}
	} else {
		st.Sandbox.PodIPs = nil
		setCondition(&st.Conditions, gen, agents.ConditionReady, metav1.ConditionFalse, res.reason, res.message)
		meta.RemoveStatusCondition(&st.Conditions, agents.ConditionFinished)
	}
	if equality.Semantic.DeepEqual(claim.Status, want.Status) {
		return nil
	}
	if _, err := c.opts.Sandboxes.SandboxClaims(claim.Namespace).UpdateStatus(ctx, want, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update claim status: %w", err)
	}
	return nil
}
