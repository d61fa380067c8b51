package authapi

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// handleRotate replaces the bearer token of the account in the path
// (POST /users/{user}/token, by bearer token, or by session cookie with a
// same-origin Origin on a top-level navigation: checkTokenRecipient). The
// old token stops opening the account as soon as each node proxy's and
// replica's claim informer sees the new hash, and the session epoch is
// raised, so every session, including any opened with the old token, ends
// too; the caller gets a fresh session. The new token is answered once:
// JSON, or a page of its own for a browser.
func (s *Server) handleRotate(w http.ResponseWriter, r *http.Request) {
	_, a, err := s.pathOwner(w, r, "rotating the token of")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := checkTokenRecipient(r); err != nil {
		s.fail(w, r, err)
		return
	}
	user := a.User
	token := newBearerToken()
	hash := account.HashToken(token)
	fresh, err := s.claims.raiseEpoch(r.Context(), user, &hash)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.opts.Metrics.Revocations.WithLabelValues("rotate").Inc()
	s.log.Info("token rotated", "user", user)
	if _, err := s.startSession(w, fresh); err != nil {
		s.fail(w, r, err)
		return
	}
	if browser(r) {
		s.respondAccount(w, r, user, token, true)
		return
	}
	writeJSON(w, http.StatusOK, accountResponse{User: user, Token: token, State: s.claims.state(r.Context(), s.claims.get(user)), URL: agentPath(user)})
}

// raiseEpoch raises the session epoch on user's claim, which ends every
// session, and empties the revoked list the epoch supersedes; with hash it
// also sets a new token hash. The patch is conditioned on the
// resourceVersion it read. It returns the account as written, once this
// replica's informer holds it.
func (s *claimStore) raiseEpoch(ctx context.Context, user string, hash *[32]byte) (account.Account, error) {
	for range 8 {
		c, err := s.claims.Get(ctx, s.name(user), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return account.Account{}, fmt.Errorf("raise session epoch: %w", ErrNoAccount)
		}
		if err != nil {
			return account.Account{}, fmt.Errorf("raise session epoch: get claim: %w: %w", ErrUnavailable, err)
		}
		a, err := account.FromClaim(c)
		if err != nil {
			return account.Account{}, fmt.Errorf("raise session epoch: %w: %w", ErrNoAccount, err)
		}
		a.Epoch, a.Revoked = a.Epoch+1, nil
		annotations := map[string]string{
			account.AnnotationSessionEpoch:    strconv.FormatInt(a.Epoch, 10),
			account.AnnotationRevokedSessions: account.EncodeRevoked(nil),
		}
		if hash != nil {
			a.TokenHash = *hash
			annotations[account.AnnotationTokenHash] = hex.EncodeToString(hash[:])
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"resourceVersion": c.ResourceVersion,
			"annotations":     annotations,
		}})
		if err != nil {
			return account.Account{}, err
		}
		updated, err := s.claims.Patch(ctx, c.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case apierrors.IsConflict(err):
			continue
		case apierrors.IsNotFound(err):
			return account.Account{}, fmt.Errorf("raise session epoch: %w", ErrNoAccount)
		case err != nil:
			return account.Account{}, fmt.Errorf("raise session epoch: patch claim: %w: %w", ErrUnavailable, err)
		}
		s.waitAnnotation(ctx, updated.Name, account.AnnotationSessionEpoch, strconv.FormatInt(a.Epoch, 10))
		return a, nil
	}
	return account.Account{}, fmt.Errorf("raise session epoch: %w: too many conflicts", ErrUnavailable)
}

// waitAnnotation waits briefly until the cached claim name has annotation
// key set to v, so this replica's own reads (login, landing page) see what
// it just wrote.
func (s *claimStore) waitAnnotation(ctx context.Context, name, key, v string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s.wait(ctx, name, func(c *extensions.SandboxClaim) bool { return c == nil || c.Annotations[key] == v })
}
