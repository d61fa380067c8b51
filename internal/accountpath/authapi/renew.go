package authapi

import (
	"fmt"
	"net/http"

	"github.com/sandgate/sandgate/internal/userorigin"
)

// maxRenewBody bounds a renewal request; a token is about 400 bytes.
const maxRenewBody = 8 << 10

// renewRequest is the body of POST /internal/v1/sessions/renew.
type renewRequest struct {
	Token string `json:"token"`
}

// renewResponse carries the renewed token and the Set-Cookie header value a
// node proxy copies onto its response, so cookie attributes are decided here
// only.
type renewResponse struct {
	Token     string `json:"token"`
	User      string `json:"user"`
	ExpiresAt int64  `json:"expires_at"`
	MaxAge    int    `json:"max_age"`
	SetCookie string `json:"set_cookie"`
}

// handleRenew issues a fresh token for a session: the presented token must
// be authentic (signature, kid, iss, aud) but may be expired; the session
// must be within COOKIE_MAX_AGE of its auth_time and not revoked by its
// claim. The new token keeps sid, auth_time and epoch. In subdomain routing
// an origin session is renewed the same way and keeps its origin. Only callers the
// TokenReview guard admits reach it.
func (s *Server) handleRenew(w http.ResponseWriter, r *http.Request) {
	var req renewRequest
	if err := readInternalJSON(w, r, maxRenewBody, &req, func() bool { return req.Token != "" }, `{"token": "<session token>"}`); err != nil {
		s.fail(w, r, err)
		return
	}
	kind := mainSession
	c, err := s.verifier.VerifyIgnoringExpiry(req.Token)
	if err != nil && s.opts.RoutingMode == userorigin.Subdomain {
		if oc, oerr := s.originVerifier.VerifyIgnoringExpiry(req.Token); oerr == nil && oc.Origin != "" {
			c, err, kind = oc, nil, originSession
		}
	}
	if err != nil {
		s.opts.Metrics.Renewals.WithLabelValues("bad_token").Inc()
		s.fail(w, r, fmt.Errorf("%w: %w", ErrBadToken, err))
		return
	}
	if _, _, err := s.usable(c); err != nil {
		s.opts.Metrics.Renewals.WithLabelValues("ended").Inc()
		s.fail(w, r, err)
		return
	}
	tok, renewed, err := s.renewToken(kind, c)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.opts.Metrics.Renewals.WithLabelValues("ok").Inc()
	s.log.Debug("session renewed", "user", c.User, "caller", Caller(r))
	s.writeSession(w, kind, tok, renewed)
}
