package authapi

import (
	"crypto/subtle"
	"net/http"

	"github.com/sandgate/sandgate/internal/account"
)

// handleLogin exchanges a bearer token (Authorization header, or the token
// field of a form or JSON body, with an optional user) for a session cookie.
// A browser goes on to the form's next when nextOf admits it, else to its
// agent. The rate limit has already run.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	in, a, err := s.readLogin(w, r)
	if err != nil {
		s.opts.Metrics.Logins.WithLabelValues("rejected").Inc()
		s.refuseLogin(w, r, err, in)
		return
	}
	if _, err := s.startSession(w, a); err != nil {
		s.fail(w, r, err)
		return
	}
	s.opts.Metrics.Logins.WithLabelValues("ok").Inc()
	s.log.Info("login", "user", a.User)
	if browser(r) {
		to := agentPath(a.User)
		if next, ok := nextOf(in.Next); ok {
			to = next
		}
		seeOther(w, r, to)
		return
	}
	writeJSON(w, http.StatusOK, accountResponse{User: a.User, State: s.claims.state(r.Context(), s.claims.get(a.User)), URL: agentPath(a.User)})
}

// readLogin reads a login and finds the account it opens; it returns
// what was sent, also when it refuses it.
func (s *Server) readLogin(w http.ResponseWriter, r *http.Request) (input, account.Account, error) {
	if err := s.checkOriginIfPresent(r); err != nil {
		return input{}, account.Account{}, err
	}
	in, err := s.readInput(w, r)
	if err != nil {
		return in, account.Account{}, err
	}
	token := bearer(r)
	if token == "" {
		token = in.Token
	}
	noteActor(r, in.User, authToken)
	if sso, ok := s.proxyUser(r); ok && token == "" {
		noteActor(r, sso, authSSO)
		if a, _, ok := s.claims.accountOf(sso); ok {
			return in, a, nil
		}
		return in, account.Account{}, ErrBadCredentials
	}
	a, err := s.checkToken(in.User, token)
	if err == nil {
		noteActor(r, a.User, authToken)
	}
	return in, a, err
}

// checkToken finds the account a bearer token opens: user's when a user is
// given, else the one whose token hash matches. Whether the user is unknown,
// its claim unusable or the token wrong, the same work is done (one SHA-256,
// one constant-time comparison, against a dummy hash when there is no
// account) and the same ErrBadCredentials returned, so neither the answer
// nor its timing tells which.
func (s *Server) checkToken(user, token string) (account.Account, error) {
	h := account.HashToken(token)
	var cand account.Account
	found := false
	if user != "" {
		cand, _, found = s.claims.accountOf(user)
	} else {
		for _, c := range s.claims.byTokenHash(h) {
			if a, err := account.FromClaim(c); err == nil {
				cand, found = a, true
				break
			}
		}
	}
	if !found {
		cand = s.dummy
	}
	if s.onCompare != nil {
		s.onCompare()
	}
	match := subtle.ConstantTimeCompare(h[:], cand.TokenHash[:]) == 1
	if !found || !match || token == "" {
		return account.Account{}, ErrBadCredentials
	}
	return cand, nil
}
