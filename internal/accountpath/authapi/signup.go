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
	user, err := s.readSignup(w, r)
	if err != nil {
		s.opts.Metrics.Signups.WithLabelValues("rejected").Inc()
		s.fail(w, r, err)
		return
	}
	token := newBearerToken()
	a := account.Account{User: user, TokenHash: account.HashToken(token), Epoch: account.FirstEpoch}
	if err := s.reserved.check(r.Context(), user, s.opts.Now()); err != nil {
		s.opts.Metrics.Signups.WithLabelValues("exists").Inc()
		s.fail(w, r, err)
		return
	}
	claim, err := s.claims.create(r.Context(), user, a.TokenHash, a.Epoch)
	if err != nil {
		outcome := "rejected"
		if code, _, _ := statusOf(err); code == http.StatusConflict {
			outcome = "exists"
		}
		s.opts.Metrics.Signups.WithLabelValues(outcome).Inc()
		s.fail(w, r, err)
		return
	}
	if err := s.reserved.check(r.Context(), user, claim.CreationTimestamp.Time); err != nil {
		s.opts.Metrics.Signups.WithLabelValues("exists").Inc()
		if rerr := s.claims.remove(context.WithoutCancel(r.Context()), claim); rerr != nil {
			s.log.Warn("signup: remove a claim taken during a recreate", "user", user, "error", rerr)
		}
		s.fail(w, r, err)
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

// respondAccount answers a signup, recreate or token rotation: a browser
// that was given a new token sees it on a page of this response alone
// (never stored, never shown again), with a link on to its agent; one
// that was not is redirected to its agent. A JSON client gets 201 when
// the sandbox is Ready and 202 while it still wakes.
//
// The token page is sent with Cross-Origin-Opener-Policy: same-origin, so
// the browser opens it in a browsing context group of its own: a window
// that an agent's script opened (or the tab an agent page navigated away
// from, with any window it opened) keeps no handle on it, though in path
// routing they share its origin. Node proxies drop COOP from apps on the
// shared origin, so no agent page can be in the token page's group.
func (s *Server) respondAccount(w http.ResponseWriter, r *http.Request, user, token string, ready bool) {
	if browser(r) {
		if token != "" {
			w.Header().Set("Cross-Origin-Opener-Policy", "same-origin")
			s.renderPage(w, r, http.StatusOK, pageData{Page: "token", User: user, Token: token, AgentURL: agentPath(user)})
			return
		}
		seeOther(w, r, agentPath(user))
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
// nothing.
func (s *Server) readSignup(w http.ResponseWriter, r *http.Request) (string, error) {
	if err := s.checkOriginIfPresent(r); err != nil {
		return "", err
	}
	in, err := s.readInput(w, r)
	if err != nil {
		return "", err
	}
	if err := s.checkInvite(in.Invite, r.Header.Get("X-Signup-Invite")); err != nil {
		return "", err
	}
	user := in.User
	noteActor(r, user, authNone)
	if sso, ok := s.proxyUser(r); ok {
		if user == "" {
			user = sso
		}
		noteActor(r, user, authSSO)
		if user != sso {
			return "", fmt.Errorf("%w: signup for %q by SSO user %q", ErrForbidden, user, sso)
		}
	}
	if err := account.ValidateUser(user); err != nil {
		return "", invalidUser(err)
	}
	return user, nil
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
