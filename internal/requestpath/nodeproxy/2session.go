package nodeproxy

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/clientaddr"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/jwt"
)

// Authentication methods, for metrics and the access log.
const (
	methodCookie = "cookie"
	methodBearer = "bearer"
	methodNone   = "none"
)

// sessions is the session stage: it authenticates a request as its
// path's user (a bearer token, or a session cookie verified offline),
// renews a session past half its life through the auth API, counts
// refusals per client, runs a user origin's entry flow, and watches the
// session of every open stream and WebSocket (watcher).
type sessions struct {
	directory     Directory
	now           func() time.Time
	rules         sessionRuleSet
	age           sessionAge
	keySets       func() uint64 // Options.KeySetsReplaced
	entryVerifier Verifier
	cookieSecure  bool
	publicOrigin  string
	stateCookie   string // the entry state's cookie name
	renewer       *renewer
	entries       *failLimiter // refused entry codes per client
	unknown       *failLimiter // refused sessions of unknown keys per client
	watch         *watcher
	m             *metrics
	log           *slog.Logger
}

// identity is who a request authenticated as. Its strings are copies.
type identity struct {
	method string
	// claims and token are the session's, for cookie authentication;
	// token is the renewed one when renewal happened.
	claims jwt.Claims
	token  string
	// bearer is the API client's token, for a hop to re-present.
	bearer string
	// setCookie is a renewed session cookie for the response.
	setCookie string
}

// authenticate decides whether the request may act as user. entry and
// lookupErr are the Directory's answer for user. A bearer token must match
// the account's hash; a session cookie must verify offline, name user, be
// within the session's maximum age and not be revoked by the claim. When
// renew is set, a token past half its lifetime is renewed (best effort),
// and an expired but renewable one must be (synchronously). Failures wrap
// ErrUnauthenticated.
func (s *sessions) authenticate(cred credentials, rules sessionRules, user string, entry informer.Entry, lookupErr error, renew bool, client netip.Prefix) (identity, error) {
	if cred.bearer != "" {
		if err := checkBearer(entry, lookupErr, cred.bearer); err != nil {
			return identity{method: methodBearer}, err
		}
		return identity{method: methodBearer, bearer: cred.bearer}, nil
	}
	if len(cred.cookies) == 0 {
		return identity{method: methodNone}, fmt.Errorf("%w: no session cookie", ErrUnauthenticated)
	}
	var last error
	for _, tok := range cred.cookies {
		id, err := s.session(tok, rules, user, entry, lookupErr, renew, client)
		if err == nil {
			return id, nil
		}
		last = err
	}
	if errors.Is(last, ErrTooManyRenewals) || errors.Is(last, ErrAuthAPIUnavailable) || errors.Is(last, informer.ErrNotSynced) {
		return identity{method: methodCookie}, last
	}
	return identity{method: methodCookie}, fmt.Errorf("%w: %w", ErrUnauthenticated, last)
}

var (
	errOtherUser = errors.New("session belongs to another user")
	errEnded     = errors.New("session revoked or past its maximum age")
	errReplaced  = errors.New("session signed by a key the signing key reset replaced")
)

// checkBearer is the bearer token's rule: the account exists and its
// token hash is the token's (a rotation ends the old token). Requests
// apply it when they authenticate, and open WebSockets and streams again
// whenever the account changes (2session_watch.go).
func checkBearer(entry informer.Entry, lookupErr error, bearer string) error {
	switch {
	case errors.Is(lookupErr, informer.ErrNotSynced):
		return fmt.Errorf("bearer: %w", lookupErr)
	case lookupErr != nil:
		return fmt.Errorf("%w: bearer: %w", ErrUnauthenticated, lookupErr)
	case !entry.Account.TokenMatches(bearer):
		return fmt.Errorf("%w: bearer token does not match", ErrUnauthenticated)
	}
	return nil
}

// sessionAge is the session's rule beyond its token: its id belongs to
// the account's current claim, it is neither revoked nor below the
// account's epoch, and it is younger than COOKIE_MAX_AGE since login.
// Requests apply it when they authenticate, and open WebSockets and
// streams again whenever the account changes and at the deadline
// (2session_watch.go).
type sessionAge struct{ max time.Duration }

// live applies the rule at now.
func (a sessionAge) live(acct account.Account, c jwt.Claims, now time.Time) bool {
	return acct.SessionValid(c.SessionID, c.Epoch) && now.Before(a.deadline(c))
}

// deadline is when a session reaches COOKIE_MAX_AGE since login.
func (a sessionAge) deadline(c jwt.Claims) time.Time {
	return c.AuthTime.Add(a.max)
}

// session checks one session token for user.
func (s *sessions) session(tok string, rules sessionRules, user string, entry informer.Entry, lookupErr error, renew bool, client netip.Prefix) (identity, error) {
	now := s.now()
	c, err := rules.verifier.Verify(tok)
	expired := errors.Is(err, jwt.ErrExpired)
	if expired && renew {
		c, err = rules.verifier.VerifyIgnoringExpiry(tok)
	}
	if errors.Is(err, jwt.ErrUnknownKey) && renew && lookupErr == nil {
		return s.renewUnknownKey(tok, rules, user, entry, now, client)
	}
	switch {
	case err != nil:
		return identity{}, err
	case c.User != user:
		return identity{}, errOtherUser
	case c.Origin != rules.origin:
		return identity{}, errOtherOrigin
	case lookupErr != nil:
		return identity{}, lookupErr
	case !s.age.live(entry.Account, c, now):
		return identity{}, errEnded
	}
	id := identity{method: methodCookie, claims: c, token: tok}
	if !renew || !(expired || halfSpent(c, now)) {
		return id, nil
	}
	r, err := s.renewer.renew(tok, rules.cookie)
	if err == nil {
		var fresh jwt.Claims
		if fresh, err = rules.verifier.Verify(r.token); err == nil && fresh.User == user && fresh.Origin == rules.origin {
			id.claims, id.token, id.setCookie = fresh, r.token, r.setCookie
			return id, nil
		}
		if err == nil {
			err = errOtherUser
		}
		err = fmt.Errorf("verify renewed token: %w", err)
	}
	if expired {
		return identity{}, err
	}
	if !errors.Is(err, ErrAuthAPIUnavailable) { // the outage itself is logged once, where it starts
		s.log.Warn("session renewal failed; the current token is still valid", "user", user, "err", err)
	}
	return id, nil
}

// renewUnknownKey handles a session token signed by a key this proxy does
// not know even after refreshing its key set (retired from the JWKS, or not
// yet published): only the auth API, which keeps retired keys for as long
// as a session lasts, can verify it. It is sent for renewal unchecked, and
// the renewed token must pass every check a known one does. Such tokens
// cost an auth API call each, so refusals are counted per client like
// refused entry codes, and a client past the budget is not sent on.
func (s *sessions) renewUnknownKey(tok string, rules sessionRules, user string, entry informer.Entry, now time.Time, client netip.Prefix) (identity, error) {
	if !s.unknown.allowed(client) {
		return identity{}, ErrTooManyRenewals
	}
	r, err := s.renewer.renew(tok, rules.cookie)
	if err != nil {
		if !errors.Is(err, ErrAuthAPIUnavailable) {
			s.unknown.failed(client)
		}
		return identity{}, fmt.Errorf("renew a token of an unknown key: %w", err)
	}
	c, err := rules.verifier.Verify(r.token)
	switch {
	case err != nil:
		return identity{}, fmt.Errorf("verify renewed token: %w", err)
	case c.User != user:
		return identity{}, errOtherUser
	case c.Origin != rules.origin:
		return identity{}, errOtherOrigin
	case !s.age.live(entry.Account, c, now):
		return identity{}, errEnded
	}
	return identity{method: methodCookie, claims: c, token: r.token, setCookie: r.setCookie}, nil
}

// halfSpent reports whether less than half of the token's lifetime is left.
func halfSpent(c jwt.Claims, now time.Time) bool {
	life := c.Expiry.Sub(c.IssuedAt)
	return c.Expiry.Sub(now) < life/2
}

// auth is the session stage: look the user up and check the request's
// credentials; a renewed session cookie is the identity's setCookie, for
// the handler to put on the response.
func (s *sessions) auth(ctx *fasthttp.RequestCtx, x *exchange) (identity, informer.Entry, error) {
	keySets := s.keySets()
	start := time.Now()
	defer s.m.observe(stageAuth, start)
	entry, lookupErr := s.directory.Lookup(x.route.user)
	rules := s.rules.of(x.route)
	cred := readCredentials(&ctx.Request.Header, rules.cookie)
	id, err := s.authenticate(cred, rules, x.route.user, entry, lookupErr, !x.hopIn, clientaddr.Key(x.client))
	x.auth = id.method
	if err != nil {
		s.m.countAuth(id.method, false)
		return id, entry, err
	}
	s.m.countAuth(id.method, true)
	x.renewed = id.setCookie != ""
	holdSession(x, id, keySets)
	return id, entry, nil
}
