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

// appHost is the Host the app is sent: the browser's, except on a user
// origin, where it is the main origin's host. Apps allow-list the Host
// names they serve (DSH_TRUSTED_HOSTS), and one per user could never be
// listed in a shared template; X-Forwarded-Host still names the user
// origin.
func (p *Proxy) appHost(x *exchange) string {
	if x.route.origin != "" {
		return p.mainHost
	}
	return x.host
}

// appOrigin is the Origin to send the app instead of origin for a request
// on a user origin, or "" to keep it: the app is told the main host, so a
// same-origin request's Origin (the user origin) becomes the main origin
// to match, as apps and WebSocket upgraders compare the two. A foreign
// Origin is kept, and stays foreign.
func (p *Proxy) appOrigin(x *exchange, origin []byte) string {
	if !strings.EqualFold(string(origin), x.route.origin) {
		return ""
	}
	return p.opts.PublicOrigin
}

// sessionRules are where a request's session comes from: the main
// session cookie, or on a user origin the origin session bound to it.
type sessionRules struct {
	cookie   string
	verifier Verifier
	origin   string
}

func (p *Proxy) sessionRules(r route) sessionRules {
	if r.origin != "" {
		return sessionRules{cookie: p.opts.OriginCookieName, verifier: p.opts.OriginVerifier, origin: r.origin}
	}
	return sessionRules{cookie: p.opts.CookieName, verifier: p.opts.Verifier}
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
// reach the app or the access log.
func (p *Proxy) enter(ctx *fasthttp.RequestCtx, x *exchange) {
	if !ctx.IsGet() {
		p.fail(ctx, x, fmt.Errorf("%w: entry takes GET", ErrBadRequest))
		return
	}
	client := clientaddr.Key(x.client)
	if !p.entries.allowed(client) {
		p.fail(ctx, x, ErrTooManyEntries)
		return
	}
	r, err := p.redeemEntry(ctx, x)
	if err != nil {
		if errors.Is(err, ErrUnauthenticated) {
			p.entries.failed(client)
		}
		p.fail(ctx, x, err)
		return
	}
	x.auth = methodCookie
	ctx.Response.Header.Add("Set-Cookie", r.setCookie)
	p.seeOther(ctx, x, userorigin.SafeNext(string(ctx.QueryArgs().Peek("next"))))
}

// redeemEntry checks the request's entry code offline and has the auth API
// redeem it for an origin session. A refusal is ErrUnauthenticated.
func (p *Proxy) redeemEntry(ctx *fasthttp.RequestCtx, x *exchange) (renewal, error) {
	code := ctx.QueryArgs().Peek("code")
	if !validCookieValue(code) {
		return renewal{}, fmt.Errorf("%w: entry code", ErrBadRequest)
	}
	state := ctx.Request.Header.Cookie(p.stateCookieName())
	if !validState(state) {
		return renewal{}, fmt.Errorf("%w: entry code refused: no entry state on this browser", ErrUnauthenticated)
	}
	if err := p.checkEntryCode(string(code), string(state), x.route); err != nil {
		return renewal{}, fmt.Errorf("%w: entry code refused: %w", ErrUnauthenticated, err)
	}
	rules := p.sessionRules(x.route)
	r, err := p.renewer.redeem(string(code)+account.EntryStateSep+string(state), x.route.origin, rules.cookie)
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
func (p *Proxy) checkEntryCode(code, state string, r route) error {
	c, err := p.opts.EntryVerifier.Verify(code)
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
// code minted in someone else's flow, holds no matching state.
func (p *Proxy) toMainOrigin(ctx *fasthttp.RequestCtx, x *exchange, err error) {
	x.err = err
	state := string(ctx.Request.Header.Cookie(p.stateCookieName()))
	if !validState([]byte(state)) {
		state = newEntryState()
	}
	ck := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(ck)
	ck.SetKey(p.stateCookieName())
	ck.SetValue(state)
	ck.SetPath("/")
	ck.SetMaxAge(int(entryStateTTL.Seconds()))
	ck.SetHTTPOnly(true)
	ck.SetSecure(p.opts.CookieSecure)
	ck.SetSameSite(fasthttp.CookieSameSiteLaxMode)
	ctx.Response.Header.SetCookie(ck)
	loc := p.opts.PublicOrigin + userPrefix + x.route.user + x.route.target
	sep := "?"
	if strings.Contains(x.route.target, "?") {
		sep = "&"
	}
	p.seeOther(ctx, x, loc+sep+account.EntryStateParam+"="+account.EntryStateBinding(state))
}

// Entry state: the browser-held half of an entry code's binding.
const (
	entryStateName = "sandgate_state"
	// entryStateTTL bounds how long one browser's entry state is reused.
	entryStateTTL = 10 * time.Minute
	entryStateLen = 43 // 32 bytes, base64url without padding
)

// stateCookieName is __Host- prefixed when cookies are secure, so no
// sibling or parent origin can plant (toss) a state of its own.
func (p *Proxy) stateCookieName() string { return p.opts.cookieName(entryStateName) }

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

// seeOther answers 303 to loc without caching or a Referer for the next
// hop.
func (p *Proxy) seeOther(ctx *fasthttp.RequestCtx, x *exchange, loc string) {
	ctx.Response.Header.Set("Location", loc)
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.Response.Header.Set("Referrer-Policy", "no-referrer")
	p.reply(ctx, x, fasthttp.StatusSeeOther, nil)
}
