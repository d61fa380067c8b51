package nodeproxy

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/clientaddr"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// sessionRules are where a request's session comes from: the main
// session cookie, or on a user origin the origin session bound to it.
type sessionRules struct {
	cookie   string
	verifier Verifier
	origin   string
}

// sessionRuleSet is where sessions come from, by route.
type sessionRuleSet struct {
	cookie, originCookie     string
	verifier, originVerifier Verifier
}

// of is the rules of r's session.
func (set sessionRuleSet) of(r route) sessionRules {
	if r.origin != "" {
		return sessionRules{cookie: set.originCookie, verifier: set.originVerifier, origin: r.origin}
	}
	return sessionRules{cookie: set.cookie, verifier: set.verifier}
}

// errOtherOrigin: an origin session minted for another origin.
var errOtherOrigin = errors.New("session bound to another origin")

// enter is the entry path of a user origin: the entry code the auth API
// minted is redeemed (once, only for this origin and user, and only by the
// browser that holds the entry state the code is bound to) for an origin
// session, whose host-only cookie is set before the browser goes on to
// next. Everything but single use is checked here first, offline: a
// forged, expired or misdirected code, or a browser without the entry
// state, is refused without a call to the auth API, and a client with too
// many refusals lately is answered 429. The code and the state never
// reach the app or the access log. It returns where the browser goes next
// and the origin session's cookie.
func (s *sessions) enter(ctx *fasthttp.RequestCtx, x *exchange) (next, setCookie string, err error) {
	if !ctx.IsGet() {
		return "", "", fmt.Errorf("%w: entry takes GET", ErrBadRequest)
	}
	client := clientaddr.Key(x.client)
	if !s.entries.allowed(client) {
		return "", "", ErrTooManyEntries
	}
	r, err := s.redeemEntry(ctx, x)
	if err != nil {
		if errors.Is(err, ErrUnauthenticated) {
			s.entries.failed(client)
		}
		return "", "", err
	}
	x.auth = methodCookie
	return userorigin.SafeNext(string(ctx.QueryArgs().Peek("next"))), r.setCookie, nil
}

// redeemEntry checks the request's entry code offline and has the auth API
// redeem it for an origin session. A refusal is ErrUnauthenticated.
func (s *sessions) redeemEntry(ctx *fasthttp.RequestCtx, x *exchange) (renewal, error) {
	code := ctx.QueryArgs().Peek("code")
	if !validCookieValue(code) {
		return renewal{}, fmt.Errorf("%w: entry code", ErrBadRequest)
	}
	state := ctx.Request.Header.Cookie(s.stateCookie)
	if !validState(state) {
		return renewal{}, fmt.Errorf("%w: entry code refused: no entry state on this browser", ErrUnauthenticated)
	}
	if err := s.checkEntryCode(string(code), string(state), x.route); err != nil {
		return renewal{}, fmt.Errorf("%w: entry code refused: %w", ErrUnauthenticated, err)
	}
	rules := s.rules.of(x.route)
	r, err := s.renewer.redeem(string(code)+account.EntryStateSep+string(state), x.route.origin, rules.cookie)
	if err == nil {
		c, verr := rules.verifier.Verify(r.token)
		switch {
		case verr != nil:
			err = fmt.Errorf("verify origin session: %w", verr)
		case c.User != x.route.user:
			err = errOtherUser
		case c.Origin != x.route.origin:
			err = errOtherOrigin
		}
	}
	if errors.Is(err, errRenewRefused) || errors.Is(err, errOtherUser) || errors.Is(err, errOtherOrigin) {
		err = fmt.Errorf("%w: entry code refused: %w", ErrUnauthenticated, err)
	}
	return r, err
}

// errOtherBrowser: an entry code brought by a browser other than the one
// it was minted for.
var errOtherBrowser = errors.New("entry code bound to another browser's entry state")

// checkEntryCode verifies an entry code as the auth API will, but for
// single use: signature, issuer, audience and expiry, the user and origin
// of r, and the binding (the part of the code's id after its last '.') to
// the browser's state.
func (s *sessions) checkEntryCode(code, state string, r route) error {
	c, err := s.entryVerifier.Verify(code)
	switch {
	case err != nil:
		return fmt.Errorf("verify entry code: %w", err)
	case c.User != r.user:
		return errOtherUser
	case c.Origin != r.origin:
		return errOtherOrigin
	}
	if !account.EntryStateMatches(c.ID, state) {
		return errOtherBrowser
	}
	return nil
}

// toMainOrigin sends a browser that reached a user origin without a usable
// origin session to the same place on the main origin, where the auth API
// mints a new entry code (or shows the login page). Like an OAuth state,
// the browser first gets a random entry state in a host-only cookie of
// this origin (kept if it has one, so parallel tabs share it), and the
// main origin gets its hash: the code is bound to that hash, and enter
// redeems it only together with the state. Another browser, lured to a
// code minted in someone else's flow, holds no matching state. It returns
// where the browser goes and the entry state's cookie.
func (s *sessions) toMainOrigin(ctx *fasthttp.RequestCtx, x *exchange) (loc, setCookie string) {
	state := string(ctx.Request.Header.Cookie(s.stateCookie))
	if !validState([]byte(state)) {
		state = newEntryState()
	}
	ck := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(ck)
	ck.SetKey(s.stateCookie)
	ck.SetValue(state)
	ck.SetPath("/")
	ck.SetMaxAge(int(entryStateTTL.Seconds()))
	ck.SetHTTPOnly(true)
	ck.SetSecure(s.cookieSecure)
	ck.SetSameSite(fasthttp.CookieSameSiteLaxMode)
	loc = s.publicOrigin + userPrefix + x.route.user + x.route.target
	sep := "?"
	if strings.Contains(x.route.target, "?") {
		sep = "&"
	}
	return loc + sep + account.EntryStateParam + "=" + account.EntryStateBinding(state), string(ck.Cookie())
}

// Entry state: the browser-held half of an entry code's binding.
const (
	entryStateName = "sandgate_state"
	// entryStateTTL bounds how long one browser's entry state is reused.
	entryStateTTL = 10 * time.Minute
	entryStateLen = 43 // 32 bytes, base64url without padding
)

func newEntryState() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails: crypto/rand.Read aborts the program instead
	return base64.RawURLEncoding.EncodeToString(b)
}

// validState accepts exactly what newEntryState makes.
func validState(v []byte) bool {
	if len(v) != entryStateLen {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(string(v))
	return err == nil
}
