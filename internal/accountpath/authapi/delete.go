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

// handleDelete deletes the account in the path (DELETE /users/{user}, or
// POST /users/{user}/delete from the landing page's confirmation form, which
// must repeat the user name). Deleting the claim removes the sandbox and
// its workspace and ends every session: node proxies refuse a user whose
// claim is gone or terminating.
func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	in, a, err := s.pathOwner(w, r, "deleting")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	user := a.User
	if r.Method == http.MethodPost && in.Confirm != user {
		s.fail(w, r, ErrNotConfirmed)
		return
	}
	if err := s.deleteAccount(r.Context(), user); err != nil {
		s.fail(w, r, err)
		return
	}
	s.opts.Metrics.Revocations.WithLabelValues("delete").Inc()
	s.log.Info("account deleted", "user", user)
	http.SetCookie(w, s.expiredCookie(s.opts.CookieName, http.SameSiteLaxMode))
	if browser(r) {
		seeOther(w, r, "/")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// deleteAccount deletes the managed claim of user, if there is one, and
// waits briefly until this replica's informer sees it go, so that its own
// reads that follow (the admin list, a login) no longer find the account.
func (s *Server) deleteAccount(ctx context.Context, user string) error {
	c, err := s.claims.claims.Get(ctx, s.claims.name(user), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("delete: get claim: %w: %w", ErrUnavailable, err)
	case !account.Managed(c):
		return fmt.Errorf("delete: claim not managed: %w", ErrNoAccount)
	}
	if err := s.claims.remove(ctx, c); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	s.claims.wait(wctx, c.Name, func(got *extensions.SandboxClaim) bool {
		return got == nil || got.UID != c.UID || got.DeletionTimestamp != nil
	})
	return nil
}
