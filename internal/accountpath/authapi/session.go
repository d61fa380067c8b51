package authapi

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// session is an authenticated browser session.
type session struct {
	claims  jwt.Claims
	account account.Account
	claim   *extensions.SandboxClaim
}

// startSession begins a new session (a fresh sid bound to a's claim UID,
// auth_time now) for a and sets its cookie.
func (s *Server) startSession(w http.ResponseWriter, a account.Account) (jwt.Claims, error) {
	if a.UID == "" {
		return jwt.Claims{}, fmt.Errorf("start session of %q: %w: account without claim uid", a.User, ErrUnavailable)
	}
	tok, c, err := s.keys.sign(jwt.Claims{User: a.User, SessionID: account.NewSessionID(a.UID), Epoch: a.Epoch})
	if err != nil {
		return jwt.Claims{}, err
	}
	http.SetCookie(w, s.sessionCookie(mainSession, tok, c))
	return c, nil
}

// renewToken issues a fresh token of kind for the session c: same user,
// sid, auth_time, epoch and origin.
func (s *Server) renewToken(kind tokenKind, c jwt.Claims) (string, jwt.Claims, error) {
	return s.keys.signAs(kind, jwt.Claims{User: c.User, SessionID: c.SessionID, AuthTime: c.AuthTime, Epoch: c.Epoch, Origin: c.Origin})
}

// sessionCookie carries a token of kind until the session's maximum age:
// every renewal sets the same end, so the browser drops the cookie when
// the session could no longer be renewed. An origin session's cookie has
// its own name and, like the main one, no Domain: host-only, so no other
// origin, sibling or parent, ever receives it.
func (s *Server) sessionCookie(kind tokenKind, token string, c jwt.Claims) *http.Cookie {
	name := s.opts.CookieName
	if kind == originSession {
		name = s.opts.OriginCookieName
	}
	left := c.AuthTime.Add(s.opts.CookieMaxAge).Sub(s.opts.Now())
	return &http.Cookie{
		Name: name, Value: token, Path: "/",
		MaxAge: max(int(left/time.Second), 1), HttpOnly: true, Secure: s.opts.CookieSecure, SameSite: http.SameSiteLaxMode,
	}
}

// expiredCookie deletes cookie name.
func (s *Server) expiredCookie(name string, sameSite http.SameSite) *http.Cookie {
	return &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.opts.CookieSecure, SameSite: sameSite}
}

// usable decides whether session c may continue (and be renewed): within
// its maximum age, with a live account whose claim does not revoke it. It
// returns ErrSessionEnded otherwise. Node proxies apply the same rule from
// their own claim informers.
func (s *Server) usable(c jwt.Claims) (account.Account, *extensions.SandboxClaim, error) {
	if !s.opts.Now().Before(c.AuthTime.Add(s.opts.CookieMaxAge)) {
		return account.Account{}, nil, fmt.Errorf("%w: past the maximum age", ErrSessionEnded)
	}
	a, claim, ok := s.claims.accountOf(c.User)
	if !ok {
		return account.Account{}, nil, fmt.Errorf("%w: no account", ErrSessionEnded)
	}
	if !a.SessionValid(c.SessionID, c.Epoch) {
		return account.Account{}, nil, fmt.Errorf("%w: revoked", ErrSessionEnded)
	}
	return a, claim, nil
}

// errNoCookie reports a request without a session cookie.
var errNoCookie = errors.New("no session cookie")

// readSession authenticates the session cookie of r. A token that is
// expired but renewable, or has less than half its lifetime left, is
// renewed on w, as a node proxy would. Failures wrap ErrNoSession.
func (s *Server) readSession(w http.ResponseWriter, r *http.Request) (session, error) {
	ck, err := r.Cookie(s.opts.CookieName)
	if err != nil || ck.Value == "" {
		return session{}, fmt.Errorf("%w: %w", ErrNoSession, errNoCookie)
	}
	c, err := s.verifier.VerifyIgnoringExpiry(ck.Value)
	if err != nil {
		return session{}, fmt.Errorf("%w: %w", ErrNoSession, err)
	}
	a, claim, err := s.usable(c)
	if err != nil {
		return session{}, fmt.Errorf("%w: %w", ErrNoSession, err)
	}
	if c.Expiry.Sub(s.opts.Now()) < s.opts.SessionTTL/2 {
		tok, renewed, err := s.renewToken(mainSession, c)
		if err != nil {
			return session{}, err
		}
		http.SetCookie(w, s.sessionCookie(mainSession, tok, renewed))
		c = renewed
	}
	return session{claims: c, account: a, claim: claim}, nil
}

// hasSessionCookie reports whether r carries a session cookie at all.
func (s *Server) hasSessionCookie(r *http.Request) bool {
	ck, err := r.Cookie(s.opts.CookieName)
	return err == nil && ck.Value != ""
}

// actor authenticates a mutation (recreate, delete, token rotation): by bearer token, which
// no browser attaches on its own, or by session cookie, which then needs a
// same-origin Origin or Referer.
func (s *Server) actor(w http.ResponseWriter, r *http.Request, in input) (account.Account, *extensions.SandboxClaim, error) {
	if tok := bearer(r); tok != "" {
		noteActor(r, in.User, authToken)
		a, err := s.checkToken(in.User, tok)
		if err != nil {
			return account.Account{}, nil, err
		}
		noteActor(r, a.User, authToken)
		return a, s.claims.get(a.User), nil
	}
	noteActor(r, in.User, authSession)
	if s.hasSessionCookie(r) {
		if err := s.checkOrigin(r); err != nil {
			return account.Account{}, nil, err
		}
	}
	sess, err := s.readSession(w, r)
	if err != nil {
		return account.Account{}, nil, err
	}
	noteActor(r, sess.account.User, authSession)
	return sess.account, sess.claim, nil
}

// checkTokenRecipient decides whether the answer to r may carry a new
// bearer token (token rotation, recreate). A caller that authenticated by
// bearer token already holds one and may. A caller that authenticated by
// session cookie may only when the browser says r is a top-level
// navigation: Sec-Fetch-Mode: navigate and Sec-Fetch-Dest: document,
// which a browser sets itself and no script can forge. In path routing an
// agent's script shares this origin, so it sends the cookie and a
// same-origin Origin with fetch; only this rule keeps it from reading a
// new token. The navigation it can still cause (a form into a new window
// or its own tab) lands on the token page, whose COOP cuts it off. Call
// it after actor authenticated r, before anything changes.
func checkTokenRecipient(r *http.Request) error {
	if bearer(r) != "" {
		return nil
	}
	if topLevelNavigation(r) {
		return nil
	}
	return fmt.Errorf("%w: Sec-Fetch-Mode %q, Sec-Fetch-Dest %q", ErrNotNavigation,
		r.Header.Get("Sec-Fetch-Mode"), r.Header.Get("Sec-Fetch-Dest"))
}

// topLevelNavigation reports whether the browser says r opens a page in a
// tab or window (Sec-Fetch-Mode navigate, Sec-Fetch-Dest document): no
// script can set either header.
func topLevelNavigation(r *http.Request) bool {
	return r.Header.Get("Sec-Fetch-Mode") == "navigate" && r.Header.Get("Sec-Fetch-Dest") == "document"
}

// pathOwner reads a mutation of the account in the path (/users/{user}/…)
// and authenticates its caller as that account's owner: a bearer token is
// checked against the path's account, and a session of another account is
// forbidden; doing names the mutation in that error.
func (s *Server) pathOwner(w http.ResponseWriter, r *http.Request, doing string) (input, account.Account, error) {
	in, err := s.readInput(w, r)
	if err != nil {
		return in, account.Account{}, err
	}
	user := r.PathValue("user")
	if in.User == "" {
		in.User = user
	}
	a, _, err := s.actor(w, r, in)
	if err != nil {
		return in, account.Account{}, err
	}
	if a.User != user {
		return in, account.Account{}, fmt.Errorf("%w: %q %s %q", ErrForbidden, a.User, doing, user)
	}
	return in, a, nil
}
