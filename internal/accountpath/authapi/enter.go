package authapi

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/userorigin"
)

// ErrBadEntryCode reports an entry code that is forged, expired, used
// before, or presented for another origin.
var ErrBadEntryCode = errors.New("entry code refused")

// handleUserPath is /u/<user>/... on the main host in subdomain routing:
// the user's browser session mints a single-use entry code bound to the
// user's origin and to the entry state the browser holds there (its
// binding arrives as the sandgate_state parameter), and is sent there; the
// main session cookie itself never leaves this host. A request without a
// binding is sent to the user origin first, whose node proxy gives the
// browser a state and sends it back. Without a session the browser goes to
// the landing page; a session of another user is refused.
func (s *Server) handleUserPath(w http.ResponseWriter, r *http.Request) {
	user := r.PathValue("user")
	sess, err := s.readSession(w, r)
	if err != nil {
		if browser(r) {
			seeOther(w, r, "/")
			return
		}
		s.fail(w, r, err)
		return
	}
	if sess.claims.User != user {
		s.fail(w, r, ErrForbidden)
		return
	}
	origin := userorigin.Origin(s.opts.CookieSecure, user, s.opts.UserDomain, r.Host)
	query, binding := cutStateBinding(r.URL.RawQuery)
	next := strings.TrimPrefix(r.URL.EscapedPath(), "/u/"+user)
	if query != "" {
		next += "?" + query
	}
	next = userorigin.SafeNext(next)
	if binding == "" {
		seeOther(w, r, origin+next)
		return
	}
	id := make([]byte, 16)
	rand.Read(id) // never fails: crypto/rand.Read aborts the program instead
	code, _, err := s.keys.signAs(entryCode, jwt.Claims{
		User: user, SessionID: sess.claims.SessionID, AuthTime: sess.claims.AuthTime, Epoch: sess.claims.Epoch,
		Origin: origin, ID: base64.RawURLEncoding.EncodeToString(id) + "." + binding,
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := url.Values{"code": {code}, "next": {next}}
	w.Header().Set("Referrer-Policy", "no-referrer")
	seeOther(w, r, origin+userorigin.EnterPath+"?"+q.Encode())
}

// formTargets are the origins the landing page's forms may end on besides
// its own: in subdomain routing, signup, login and recreate redirect
// through /u/<user>/ to the user's origin, and browsers hold a form's
// redirects to form-action too.
func (s *Server) formTargets() []string {
	if s.opts.RoutingMode != userorigin.Subdomain {
		return nil
	}
	scheme := "http"
	if s.opts.CookieSecure {
		scheme = "https"
	}
	return []string{scheme + "://*." + s.opts.UserDomain + ":*"}
}

// redeemRequest is the body of POST /internal/v1/origin/redeem: the code a
// browser brought to a user origin, and that origin as the node proxy saw
// it.
type redeemRequest struct {
	Code   string `json:"code"`
	Origin string `json:"origin"`
}

// handleRedeem turns an entry code into an origin session, once: the code
// must verify as an entry code, be unexpired, name the origin it was
// brought to, come with the entry state it is bound to (from the cookie of
// the browser that brought it), belong to a session that is still usable,
// and not have been redeemed before by any replica. Every check before the
// last runs without a call to the API server. The answer has the same shape as a
// renewal's, with the origin's host-only cookie.
func (s *Server) handleRedeem(w http.ResponseWriter, r *http.Request) {
	var req redeemRequest
	if err := readInternalJSON(w, r, maxRenewBody, &req, func() bool { return req.Code != "" && req.Origin != "" },
		`{"code": "<entry code>~<entry state>", "origin": "<origin>"}`); err != nil {
		s.fail(w, r, err)
		return
	}
	code, state, _ := strings.Cut(req.Code, account.EntryStateSep)
	c, err := s.entryVerifier.Verify(code)
	switch {
	case err != nil:
		err = fmt.Errorf("%w: %w", ErrBadEntryCode, err)
	case c.ID == "" || c.Origin != req.Origin:
		err = fmt.Errorf("%w: minted for another origin", ErrBadEntryCode)
	case !account.EntryStateMatches(c.ID, state):
		err = fmt.Errorf("%w: presented without the entry state of the browser it was minted for", ErrBadEntryCode)
	}
	if err == nil {
		_, _, err = s.usable(c)
	}
	if err == nil {
		if err = s.claims.useEntryCode(r.Context(), c.User, c.ID, c.Expiry); errors.Is(err, errCodeUsed) {
			err = fmt.Errorf("%w: %w", ErrBadEntryCode, err)
		}
	}
	if err != nil {
		s.opts.Metrics.Entries.WithLabelValues("refused").Inc()
		s.fail(w, r, err)
		return
	}
	tok, oc, err := s.keys.signAs(originSession, jwt.Claims{
		User: c.User, SessionID: c.SessionID, AuthTime: c.AuthTime, Epoch: c.Epoch, Origin: c.Origin,
	})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.opts.Metrics.Entries.WithLabelValues("ok").Inc()
	s.log.Info("entered user origin", "user", c.User, "caller", Caller(r))
	s.writeSession(w, originSession, tok, oc)
}

// bindingLen is the length of account.EntryStateBinding's result.
const bindingLen = 22

// cutStateBinding removes the entry state binding the node proxy appended
// to a query (the last parameter) and returns the rest and the binding,
// or the query unchanged and "" when it carries no well-formed binding.
func cutStateBinding(query string) (rest, binding string) {
	prefix := account.EntryStateParam + "="
	i := strings.LastIndex(query, prefix)
	if i < 0 || (i > 0 && query[i-1] != '&') {
		return query, ""
	}
	b := query[i+len(prefix):]
	if len(b) != bindingLen || !base64URL(b) {
		return query, ""
	}
	return strings.TrimSuffix(query[:i], "&"), b
}

func base64URL(s string) bool {
	_, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil
}
