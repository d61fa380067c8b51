package authapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi/agents"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// maxWakeBody bounds a wake request.
const maxWakeBody = 4 << 10

// wakePatch is the merge patch that wakes a Sandbox.
var wakePatch = []byte(`{"spec":{"operatingMode":"` + string(agents.OperatingModeRunning) + `"}}`)

// wakeRequest is the body of POST /internal/v1/wake: a user, or a Sandbox
// by namespace and name.
type wakeRequest struct {
	User      string `json:"user,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Sandbox   string `json:"sandbox,omitempty"`
}

// wakeResponse says which Sandbox the request woke and whether it had to
// be patched (false: it was already Running, or not bound yet).
type wakeResponse struct {
	User    string `json:"user"`
	Sandbox string `json:"sandbox,omitempty"`
	Patched bool   `json:"patched"`
}

// handleWake sets a managed user's Sandbox to spec.operatingMode Running
// with a merge patch. It is idempotent: a Running Sandbox is not written.
// Unknown users, foreign claims and Sandboxes no managed claim owns are
// 404. Only callers the TokenReview guard admits reach it.
func (s *Server) handleWake(w http.ResponseWriter, r *http.Request) {
	var req wakeRequest
	if err := readInternalJSON(w, r, maxWakeBody, &req, func() bool { return (req.User == "") != (req.Sandbox == "") },
		`{"user": "<user>"} or {"namespace": "<namespace>", "sandbox": "<name>"}`); err != nil {
		s.fail(w, r, err)
		return
	}
	noteActor(r, req.User, authCaller)
	noteAudit(r, "caller", Caller(r))
	if req.Sandbox != "" {
		noteAudit(r, "sandbox", req.Sandbox)
	}
	c, err := s.wakeTarget(req)
	if err != nil {
		s.opts.Metrics.Wakes.WithLabelValues("unknown").Inc()
		s.fail(w, r, err)
		return
	}
	a, _ := account.FromClaim(c) // wakeTarget checked it
	out := wakeResponse{User: a.User, Sandbox: sandboxOf(c)}
	noteActor(r, a.User, authCaller)
	if req.Sandbox == "" && out.Sandbox != "" {
		noteAudit(r, "sandbox", out.Sandbox)
	}
	if out.Sandbox == "" {
		s.opts.Metrics.Wakes.WithLabelValues("unbound").Inc()
		noteAudit(r, "result", "unbound")
		writeJSON(w, http.StatusAccepted, out) // the controller is still binding one; it starts Running
		return
	}
	patched, err := s.wakeSandbox(r.Context(), c)
	if err != nil {
		if errors.Is(err, ErrNoAccount) {
			s.opts.Metrics.Wakes.WithLabelValues("unknown").Inc()
		}
		s.fail(w, r, err)
		return
	}
	out.Patched = patched
	if patched {
		s.log.Info("sandbox woken", "user", a.User, "sandbox", out.Sandbox, "caller", Caller(r))
	}
	result := map[bool]string{true: "patched", false: "running"}[out.Patched]
	noteAudit(r, "result", result)
	s.opts.Metrics.Wakes.WithLabelValues(result).Inc()
	writeJSON(w, http.StatusOK, out)
}

// wakeSandbox sets the Sandbox of claim c Running unless it is; patched
// says whether it was written.
func (s *Server) wakeSandbox(ctx context.Context, c *extensions.SandboxClaim) (patched bool, err error) {
	sb, err := s.claims.sandboxOf(ctx, c)
	if err != nil {
		return false, err
	}
	if sb.Spec.OperatingMode != agents.OperatingModeSuspended {
		return false, nil
	}
	if _, err := s.claims.sandboxes.Patch(ctx, sb.Name, types.MergePatchType, wakePatch, metav1.PatchOptions{}); err != nil {
		return false, fmt.Errorf("patch sandbox: %w: %w", ErrUnavailable, err)
	}
	return true, nil
}

// wakeTarget finds the managed, live claim a wake request names, or
// ErrNoAccount (or a bad request for an invalid user name).
func (s *Server) wakeTarget(req wakeRequest) (*extensions.SandboxClaim, error) {
	if req.User != "" {
		if err := account.ValidateUser(req.User); err != nil {
			return nil, invalidUser(err)
		}
		_, c, ok := s.claims.accountOf(req.User)
		if !ok || !account.Managed(c) || c.DeletionTimestamp != nil {
			return nil, fmt.Errorf("%w: user %s", ErrNoAccount, req.User)
		}
		return c, nil
	}
	if req.Namespace != s.opts.Namespace {
		return nil, fmt.Errorf("%w: namespace %s", ErrNoAccount, req.Namespace)
	}
	for _, obj := range s.claims.informer.GetStore().List() {
		c := obj.(*extensions.SandboxClaim)
		if sandboxOf(c) != req.Sandbox {
			continue
		}
		if _, err := account.FromClaim(c); err != nil || !account.Managed(c) || c.DeletionTimestamp != nil {
			break
		}
		return c, nil
	}
	return nil, fmt.Errorf("%w: sandbox %s", ErrNoAccount, req.Sandbox)
}

// sandboxOf reads the Sandbox claim c is bound to: ErrNoAccount when it
// is bound to none, is gone, or belongs to another claim.
func (s *claimStore) sandboxOf(ctx context.Context, c *extensions.SandboxClaim) (*agents.Sandbox, error) {
	name := sandboxOf(c)
	if name == "" {
		return nil, fmt.Errorf("%w: claim %s has no sandbox", ErrNoAccount, c.Name)
	}
	sb, err := s.sandboxes.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("%w: sandbox %s", ErrNoAccount, name)
	case err != nil:
		return nil, fmt.Errorf("get sandbox: %w: %w", ErrUnavailable, err)
	case !ownedBy(sb, c):
		return nil, fmt.Errorf("%w: sandbox %s is not the claim's", ErrNoAccount, name)
	}
	return sb, nil
}

// sandboxOf names the Sandbox a claim is bound to, or "".
func sandboxOf(c *extensions.SandboxClaim) string {
	if n := c.Status.Sandbox.Name; n != "" {
		return n
	}
	return c.Annotations[extensions.AnnotationSandboxName]
}

// ownedBy reports whether sb belongs to c: a claim-uid label, when present,
// names c.
func ownedBy(sb *agents.Sandbox, c *extensions.SandboxClaim) bool {
	uid, ok := sb.Labels[agents.LabelClaimUID]
	return !ok || types.UID(uid) == c.UID
}
