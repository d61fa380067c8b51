package authapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

const (
	// deleteWait bounds how long recreate waits for the old claim to
	// disappear.
	deleteWait = 30 * time.Second
	// intruderWait is how long recreate lets a signup that took the
	// reserved name remove its claim itself.
	intruderWait = 5 * time.Second
)

// handleRecreate wipes the user's sandbox: the claim is deleted (dropping
// sandbox and workspace) and created again, under a reservation of the
// name, with a new bearer token. The new claim's UID ends every session of
// the old one, and the old token. The caller gets a fresh session and the
// new token, answered like a signup; so a caller by session cookie must be
// a top-level navigation (checkTokenRecipient), or nothing is done.
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
	if err := checkTokenRecipient(r); err != nil {
		s.fail(w, r, err)
		return
	}
	token := newBearerToken()
	fresh, err := s.recreate(r.Context(), a, account.HashToken(token))
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
	s.respondAccount(w, r, a.User, token, ready)
}

// recreate replaces the claim of caller (the account the request
// authenticated as, by UID) with a new claim holding tokenHash, under a
// reservation of the name, and returns the new account: a new UID, so no
// session of the old claim is valid for it. Its epoch is the old one plus
// one, which a node proxy that predates the UID binding also enforces.
func (s *Server) recreate(ctx context.Context, caller account.Account, tokenHash [32]byte) (account.Account, error) {
	lease, err := s.reserved.reserve(ctx, caller.User)
	if err != nil {
		return account.Account{}, fmt.Errorf("recreate: %w", err)
	}
	defer func() {
		if err := s.reserved.release(ctx, lease); err != nil {
			s.log.Warn("recreate: release reservation", "user", caller.User, "error", err)
		}
	}()
	old, err := s.claims.claims.Get(ctx, s.claims.name(caller.User), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return account.Account{}, fmt.Errorf("recreate: %w", ErrNoAccount)
	}
	if err != nil {
		return account.Account{}, fmt.Errorf("recreate: get claim: %w: %w", ErrUnavailable, err)
	}
	if string(old.UID) != caller.UID {
		return account.Account{}, fmt.Errorf("recreate: claim %s is no longer the caller's account: %w", old.Name, ErrNoAccount)
	}
	prev, err := account.FromClaim(old)
	if err != nil {
		return account.Account{}, fmt.Errorf("recreate: %w: %w", ErrNoAccount, err)
	}
	if err := s.claims.removeAndWait(ctx, old); err != nil {
		return account.Account{}, fmt.Errorf("recreate: %w", err)
	}
	a := account.Account{User: caller.User, TokenHash: tokenHash, Epoch: prev.Epoch + 1}
	c, err := s.createReserved(ctx, a)
	if err != nil {
		return account.Account{}, fmt.Errorf("recreate: %w", err)
	}
	a.UID = string(c.UID)
	s.claims.waitSeen(ctx, c.Name, c.UID)
	return a, nil
}

// createReserved creates a's claim while its name is reserved and the old
// claim is gone, retrying for a while rather than lose the account to a
// passing API server error. A claim found in the way was created by a
// signup during the reservation, which removes it on its own; if it does
// not (its replica died), it is removed here.
func (s *Server) createReserved(ctx context.Context, a account.Account) (*extensions.SandboxClaim, error) {
	var err error
	for attempt := range 5 {
		var c *extensions.SandboxClaim
		if c, err = s.claims.create(ctx, a.User, a.TokenHash, a.Epoch); err == nil || ctx.Err() != nil {
			return c, err
		}
		if errors.Is(err, ErrExists) {
			if err := s.claims.removeIntruder(ctx, a.User); err != nil {
				return nil, err
			}
			continue
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	return nil, err
}

// removeAndWait deletes the claim c and waits until this replica's cache
// no longer holds it.
func (s *claimStore) removeAndWait(ctx context.Context, c *extensions.SandboxClaim) error {
	if err := s.remove(ctx, c); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, deleteWait)
	defer cancel()
	if _, gone := s.wait(wctx, c.Name, func(cur *extensions.SandboxClaim) bool { return cur == nil || cur.UID != c.UID }); !gone {
		return fmt.Errorf("claim %s still present after %v: %w", c.Name, deleteWait, ErrUnavailable)
	}
	return nil
}

// removeIntruder waits briefly for the signup that took user's reserved
// name to give it back, then removes its claim itself.
func (s *claimStore) removeIntruder(ctx context.Context, user string) error {
	wctx, cancel := context.WithTimeout(ctx, intruderWait)
	_, gone := s.wait(wctx, s.name(user), func(c *extensions.SandboxClaim) bool { return c == nil })
	cancel()
	if gone {
		return nil
	}
	c, err := s.claims.Get(ctx, s.name(user), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get the claim in the way: %w: %w", ErrUnavailable, err)
	}
	return s.removeAndWait(ctx, c)
}
