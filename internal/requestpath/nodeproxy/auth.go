package nodeproxy

import (
	"bytes"
	"errors"
	"fmt"
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

// maxCredentialLen bounds a bearer token or session cookie value; our
// tokens are a few hundred bytes.
const maxCredentialLen = 4096

// maxSessionCookies bounds how many same-named session cookies are tried,
// e.g. a stale one left on another path next to the current one.
const maxSessionCookies = 4

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

// credentials is what a request presents, parsed from its headers.
type credentials struct {
	bearer  string   // from Authorization: Bearer
	cookies []string // session cookie values, in order
}

// readCredentials copies the bearer token and session cookie values out of
// h. An Authorization header of another scheme is ignored (and never
// forwarded).
func readCredentials(h *fasthttp.RequestHeader, cookieName string) credentials {
	var c credentials
	if tok, ok := parseBearer(h.Peek("Authorization")); ok {
		c.bearer = tok
	}
	for _, line := range h.PeekAll(fasthttp.HeaderCookie) {
		for len(line) > 0 && len(c.cookies) < maxSessionCookies {
			var pair []byte
			pair, line, _ = bytes.Cut(line, cookieSeparator)
			if v, ok := cookieValue(pair, cookieName); ok && validCookieValue(v) {
				c.cookies = append(c.cookies, string(v))
			}
		}
	}
	return c
}

var cookieSeparator = []byte(";")

// cookieValue is the value of one name=value pair of a Cookie header when
// its name is name, read as fasthttp's own cookie parser does (spaces
// around both trimmed, one pair of quotes around the value dropped), so
// that finding the session cookie parses none of the others.
func cookieValue(pair []byte, name string) ([]byte, bool) {
	k, v, ok := bytes.Cut(pair, []byte("="))
	if !ok || string(bytes.Trim(k, " \t")) != name {
		return nil, false
	}
	v = bytes.Trim(v, " \t")
	if len(v) > 1 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	return v, true
}

var bearerScheme = []byte("bearer")

// parseBearer returns the token of an RFC 6750 "Bearer <token68>" value.
func parseBearer(v []byte) (string, bool) {
	if len(v) < len(bearerScheme)+2 || !bytes.EqualFold(v[:len(bearerScheme)], bearerScheme) || v[len(bearerScheme)] != ' ' {
		return "", false
	}
	tok := bytes.TrimLeft(v[len(bearerScheme):], " ")
	if len(tok) == 0 || len(tok) > maxCredentialLen {
		return "", false
	}
	i := 0
	for i < len(tok) && isToken68(tok[i]) {
		i++
	}
	for i < len(tok) && tok[i] == '=' {
		i++
	}
	if i != len(tok) || tok[0] == '=' {
		return "", false
	}
	return string(tok), true
}

func isToken68(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/'
}

// validCookieValue accepts what a session token can be: non-empty,
// bounded, RFC 6265 cookie octets.
func validCookieValue(v []byte) bool {
	if len(v) == 0 || len(v) > maxCredentialLen {
		return false
	}
	for _, c := range v {
		if c <= ' ' || c >= 0x7f || c == '"' || c == ',' || c == ';' || c == '\\' {
			return false
		}
	}
	return true
}

// authenticate decides whether the request may act as user. entry and
// lookupErr are the Directory's answer for user. A bearer token must match
// the account's hash; a session cookie must verify offline, name user, be
// within the session's maximum age and not be revoked by the claim. When
// renew is set, a token past half its lifetime is renewed (best effort),
// and an expired but renewable one must be (synchronously). Failures wrap
// ErrUnauthenticated.
func (p *Proxy) authenticate(cred credentials, rules sessionRules, user string, entry informer.Entry, lookupErr error, renew bool, client netip.Prefix) (identity, error) {
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
		id, err := p.session(tok, rules, user, entry, lookupErr, renew, client)
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
// whenever the account changes (watch.go).
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

// sessionLive is the session's rule beyond its token: its id belongs to
// the account's current claim, it is neither revoked nor below the
// account's epoch, and now is before its maximum age (sessionDeadline).
// Requests apply it when they authenticate, and open WebSockets and
// streams again whenever the account changes and at the deadline
// (watch.go).
func (p *Proxy) sessionLive(a account.Account, c jwt.Claims, now time.Time) bool {
	return a.SessionValid(c.SessionID, c.Epoch) && now.Before(p.sessionDeadline(c))
}

// sessionDeadline is when a session reaches COOKIE_MAX_AGE since login.
func (p *Proxy) sessionDeadline(c jwt.Claims) time.Time {
	return c.AuthTime.Add(p.opts.CookieMaxAge)
}

// session checks one session token for user.
func (p *Proxy) session(tok string, rules sessionRules, user string, entry informer.Entry, lookupErr error, renew bool, client netip.Prefix) (identity, error) {
	now := p.opts.Now()
	c, err := rules.verifier.Verify(tok)
	expired := errors.Is(err, jwt.ErrExpired)
	if expired && renew {
		c, err = rules.verifier.VerifyIgnoringExpiry(tok)
	}
	if errors.Is(err, jwt.ErrUnknownKey) && renew && lookupErr == nil {
		return p.renewUnknownKey(tok, rules, user, entry, now, client)
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
	case !p.sessionLive(entry.Account, c, now):
		return identity{}, errEnded
	}
	id := identity{method: methodCookie, claims: c, token: tok}
	if !renew || !(expired || halfSpent(c, now)) {
		return id, nil
	}
	r, err := p.renewer.renew(tok, rules.cookie)
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
		p.log.Warn("session renewal failed; the current token is still valid", "user", user, "err", err)
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
func (p *Proxy) renewUnknownKey(tok string, rules sessionRules, user string, entry informer.Entry, now time.Time, client netip.Prefix) (identity, error) {
	if !p.unknown.allowed(client) {
		return identity{}, ErrTooManyRenewals
	}
	r, err := p.renewer.renew(tok, rules.cookie)
	if err != nil {
		if !errors.Is(err, ErrAuthAPIUnavailable) {
			p.unknown.failed(client)
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
	case !p.sessionLive(entry.Account, c, now):
		return identity{}, errEnded
	}
	return identity{method: methodCookie, claims: c, token: r.token, setCookie: r.setCookie}, nil
}

// halfSpent reports whether less than half of the token's lifetime is left.
func halfSpent(c jwt.Claims, now time.Time) bool {
	life := c.Expiry.Sub(c.IssuedAt)
	return c.Expiry.Sub(now) < life/2
}

// auth is the auth stage: look the user up, check the request's
// credentials, and put a renewed session cookie on the response.
func (p *Proxy) auth(ctx *fasthttp.RequestCtx, x *exchange) (identity, informer.Entry, error) {
	start := time.Now()
	defer p.m.observe(stageAuth, start)
	entry, lookupErr := p.opts.Directory.Lookup(x.route.user)
	rules := p.sessionRules(x.route)
	cred := readCredentials(&ctx.Request.Header, rules.cookie)
	id, err := p.authenticate(cred, rules, x.route.user, entry, lookupErr, !x.hopIn, clientaddr.Key(x.client))
	x.auth = id.method
	if err != nil {
		p.m.auth.WithLabelValues(id.method, "rejected").Inc()
		return id, entry, err
	}
	p.m.auth.WithLabelValues(id.method, "ok").Inc()
	if id.setCookie != "" {
		ctx.Response.Header.Add("Set-Cookie", id.setCookie)
		x.renewed = true
	}
	return id, entry, nil
}
