package authapi

import (
	"net/http"
)

// clearSiteData is sent on logout. "executionContexts" is left out: it
// would reload every tab of the origin, and browsers no longer support it.
const clearSiteData = `"cache", "cookies", "storage"`

// handleLogout ends the session of the cookie: its sid goes on the claim's
// revoked list, so every node proxy refuses it (and renewal stops) as soon
// as its claim informer sees the change. Without a valid session it only
// clears the cookies. A logout from another site is refused, cookie or
// not (checkLogoutOrigin). Every other answer carries Clear-Site-Data, so
// the browser also drops what agents left on this origin (in path routing
// they share it): cookies, storage (service workers included) and cache.
// A browser is sent back to the landing page; other clients get 204.
func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	if err := s.checkLogoutOrigin(r); err != nil {
		s.fail(w, r, err)
		return
	}
	if s.hasSessionCookie(r) {
		ck, _ := r.Cookie(s.opts.CookieName)
		if c, err := s.verifier.VerifyIgnoringExpiry(ck.Value); err == nil {
			noteActor(r, c.User, authSession)
			expiry := c.AuthTime.Add(s.opts.CookieMaxAge)
			if err := s.claims.revokeSession(r.Context(), c.User, c.SessionID, c.Epoch, expiry); err != nil {
				s.fail(w, r, err)
				return
			}
			s.log.Info("logout", "user", c.User)
		}
	}
	s.signedOut(w, r)
}

// checkLogoutOrigin refuses a logout from another site. With a session
// cookie it needs a same-origin Origin or Referer (checkOrigin). Without
// one it is checked too when it names where it comes from: a cross-site
// form carries no cookie (SameSite=Lax) but would still get
// Clear-Site-Data, which in path routing wipes the storage of every agent
// on the origin. A request with neither header (an API client) passes.
func (s *Server) checkLogoutOrigin(r *http.Request) error {
	if s.hasSessionCookie(r) {
		return s.checkOrigin(r)
	}
	return s.checkOriginIfPresent(r)
}

// handleLogoutEverywhere ends every session of the account in the path
// (POST /users/{user}/logout, by bearer token or by session cookie with a
// same-origin Origin, as the landing page's form sends): the claim's
// session epoch is raised, so every node proxy refuses each of them as
// soon as its claim informer sees it. The token, the claim and the
// workspace stay. The caller's own cookie goes too: a browser is sent to
// the landing page, other clients get 204.
func (s *Server) handleLogoutEverywhere(w http.ResponseWriter, r *http.Request) {
	_, a, err := s.pathOwner(w, r, "signing out every session of")
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, err := s.claims.raiseEpoch(r.Context(), a.User, nil); err != nil {
		s.fail(w, r, err)
		return
	}
	s.opts.Metrics.Revocations.WithLabelValues("everywhere").Inc()
	s.log.Info("signed out everywhere", "user", a.User)
	s.signedOut(w, r)
}

// signedOut ends a logout: the caller's cookie and site data are cleared,
// a browser is sent to the landing page, other clients get 204.
func (s *Server) signedOut(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, s.expiredCookie(s.opts.CookieName, http.SameSiteLaxMode))
	w.Header().Set("Clear-Site-Data", clearSiteData)
	if browser(r) {
		seeOther(w, r, "/")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
