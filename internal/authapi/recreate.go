package authapi

import (
	"context"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// deleteWait bounds how long recreate waits for the old claim to disappear.
const deleteWait = 30 * time.Second

// handleRecreate wipes the user's sandbox: the claim is deleted (dropping
// sandbox and workspace) and created again with the same bearer token and a
// higher session epoch, which ends every session of the user. The caller
// gets a fresh session at the new epoch and is answered like a signup.
func (s *Server) handleRecreate(w http.ResponseWriter, r *http.Request) {
	in, err := s.readInput(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	a, _, err := s.actor(w, r, in)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	fresh, err := s.recreate(r.Context(), a.User)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.opts.Metrics.Revocations.WithLabelValues("recreate").Inc()
	s.log.Info("account recreated", "user", a.User)
	ready := s.claims.waitReady(r.Context(), a.User, s.opts.WakeTimeout)
	if _, err := s.startSession(w, fresh); err != nil {
		s.fail(w, r, err)
		return
	}
	s.respondAccount(w, r, a.User, "", ready)
}

// recreate replaces user's claim and returns the new account. The token
// hash is read from the API server, not the cache, so the newest state is
// carried over.
func (s *Server) recreate(ctx context.Context, user string) (account.Account, error) {
	old, err := s.claims.claims.Get(ctx, s.claims.name(user), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return account.Account{}, fmt.Errorf("recreate: %w", ErrNoAccount)
	}
	if err != nil {
		return account.Account{}, fmt.Errorf("recreate: get claim: %w: %w", ErrUnavailable, err)
	}
	a, err := account.FromClaim(old)
	if err != nil {
		return account.Account{}, fmt.Errorf("recreate: %w: %w", ErrNoAccount, err)
	}
	if err := s.claims.remove(ctx, old); err != nil {
		return account.Account{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, deleteWait)
	_, gone := s.claims.wait(wctx, old.Name, func(c *extensions.SandboxClaim) bool { return c == nil || c.UID != old.UID })
	cancel()
	if !gone {
		return account.Account{}, fmt.Errorf("recreate: old claim still present after %v: %w", deleteWait, ErrUnavailable)
	}
	a.Epoch = max(a.Epoch+1, initialEpoch(s.opts.Now()))
	a.Revoked = nil
	// The old claim is gone: retry the create for a while rather than lose
	// the account to a passing API server error.
	var c *extensions.SandboxClaim
	for attempt := range 5 {
		if c, err = s.claims.create(ctx, user, a.TokenHash, a.Epoch); err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	if err != nil {
		return account.Account{}, fmt.Errorf("recreate: %w", err)
	}
	s.claims.waitSeen(ctx, c.Name, c.UID)
	return a, nil
}
