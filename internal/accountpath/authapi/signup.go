package authapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"

	"github.com/sandgate/sandgate/internal/account"
)

// tokenBytes is the entropy of a bearer token: 256 bits.
const tokenBytes = 32

// accountResponse is the JSON answer to a signup, recreate, token rotation
// or login; Token is there only where a new one was made.
type accountResponse struct {
	User  string `json:"user"`
	Token string `json:"token,omitempty"`
	State string `json:"state"`
	URL   string `json:"url"`
}

// handleSignup runs signup -> claim -> session. The rate limit has already
// run, before the body is read.
func (s *Server) handleSignup(w http.ResponseWriter, r *http.Request) {
	in, user, err := s.readSignup(w, r)
	if err != nil {
		s.opts.Metrics.Signups.WithLabelValues("rejected").Inc()
		s.refuseSignup(w, r, err, in)
		return
	}
	token := newBearerToken()
	a := account.Account{User: user, TokenHash: account.HashToken(token), Epoch: account.FirstEpoch}
	if err := s.reserved.check(r.Context(), user, s.opts.Now()); err != nil {
		s.opts.Metrics.Signups.WithLabelValues("exists").Inc()
		s.refuseSignup(w, r, err, in)
		return
	}
	claim, err := s.claims.create(r.Context(), user, a.TokenHash, a.Epoch)
	if err != nil {
		outcome := "rejected"
		if code, _, _ := statusOf(err); code == http.StatusConflict {
			outcome = "exists"
		}
		s.opts.Metrics.Signups.WithLabelValues(outcome).Inc()
		s.refuseSignup(w, r, err, in)
		return
	}
	if err := s.reserved.check(r.Context(), user, claim.CreationTimestamp.Time); err != nil {
		s.opts.Metrics.Signups.WithLabelValues("exists").Inc()
		if rerr := s.claims.remove(context.WithoutCancel(r.Context()), claim); rerr != nil {
			s.log.Warn("signup: remove a claim taken during a recreate", "user", user, "error", rerr)
		}
		s.refuseSignup(w, r, err, in)
		return
	}
	a.UID = string(claim.UID)
	s.opts.Metrics.Signups.WithLabelValues("created").Inc()
	s.log.Info("account created", "user", user, "claim", claim.Name)
	s.claims.waitSeen(r.Context(), claim.Name, claim.UID)
	ready := s.claims.waitReady(r.Context(), user, s.signupWait(r))
	if _, err := s.startSession(w, a); err != nil {
		s.fail(w, r, err)
		return
	}
	s.respondAccount(w, r, user, token, ready)
}

// respondAccount answers a signup, recreate or token rotation. A browser
// that was given a new token is sent (303) to the token view, which shows
// it once (tokenview.go), so no reload repeats the request; one that was
// not is sent to its agent. A JSON client gets 201 when the sandbox is
// Ready and 202 while it still wakes.
func (s *Server) respondAccount(w http.ResponseWriter, r *http.Request, user, token string, ready bool) {
	if browser(r) {
		if token == "" {
			seeOther(w, r, agentPath(user))
			return
		}
		ck, err := s.tokenCookie(user, token)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		http.SetCookie(w, ck)
		seeOther(w, r, tokenViewPath(user))
		return
	}
	code, state := http.StatusAccepted, StateWaking
	if ready {
		code, state = http.StatusCreated, StateReady
	}
	writeJSON(w, code, accountResponse{User: user, Token: token, State: state, URL: agentPath(user)})
}

// readSignup reads and checks a signup: body size, invite, user name (which
// must match the SSO proxy's user when AUTH_PROXY_HEADER is set). It creates
// nothing. It returns what was sent, also when it refuses it.
func (s *Server) readSignup(w http.ResponseWriter, r *http.Request) (input, string, error) {
	if err := s.checkOriginIfPresent(r); err != nil {
		return input{}, "", err
	}
	in, err := s.readInput(w, r)
	if err != nil {
		return in, "", err
	}
	if err := s.checkInvite(in.Invite, r.Header.Get("X-Signup-Invite")); err != nil {
		return in, "", err
	}
	user := in.User
	noteActor(r, user, authNone)
	if sso, ok := s.proxyUser(r); ok {
		if user == "" {
			user = sso
		}
		noteActor(r, user, authSSO)
		if user != sso {
			return in, "", fmt.Errorf("%w: signup for %q by SSO user %q", ErrForbidden, user, sso)
		}
	}
	if err := account.ValidateUser(user); err != nil {
		return in, "", invalidUser(err)
	}
	return in, user, nil
}

// checkInvite compares the invite from the form or header with
// SIGNUP_INVITE_CODE in constant time (both hashed, so length leaks nothing).
func (s *Server) checkInvite(field, header string) error {
	if s.opts.InviteCode == "" {
		return nil
	}
	got := field
	if got == "" {
		got = header
	}
	want := sha256.Sum256([]byte(s.opts.InviteCode))
	have := sha256.Sum256([]byte(got))
	if subtle.ConstantTimeCompare(want[:], have[:]) != 1 {
		return ErrBadInvite
	}
	return nil
}

// proxyUser returns the user an SSO proxy asserts in AUTH_PROXY_HEADER, when
// that is configured, mapped by account.SSOUserName.
func (s *Server) proxyUser(r *http.Request) (string, bool) {
	if s.opts.AuthProxyHeader == "" {
		return "", false
	}
	return account.SSOUserName(r.Header.Get(s.opts.AuthProxyHeader))
}

// newBearerToken returns 32 random bytes, base64url.
func newBearerToken() string {
	b := make([]byte, tokenBytes)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// agentPath is where a user's agent is served.
func agentPath(user string) string { return "/u/" + user + "/" }
