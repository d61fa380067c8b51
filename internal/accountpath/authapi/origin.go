package authapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// checkOrigin enforces same-origin on a cookie-authenticated mutation: the
// Origin header, or the Referer when Origin is absent or "null", must name
// this host (the Host the browser sent, which node proxies keep), over https
// when cookies are secure. A mutation with neither header is refused: every
// browser sends Origin on a POST, so only a forged request lacks both.
func (s *Server) checkOrigin(r *http.Request) error {
	src := r.Header.Get("Origin")
	if src == "" || src == "null" {
		src = r.Header.Get("Referer")
	}
	if src == "" {
		return fmt.Errorf("%w: no Origin or Referer", ErrBadOrigin)
	}
	return s.sameHost(r, src)
}

// checkOriginIfPresent refuses a request whose Origin, or Referer when
// Origin is absent, names another site ("null" included), and lets
// through requests with neither (API clients). Signup and login use it:
// they carry no cookie to abuse, but a cross-site form must not log a
// browser into someone else's account. So does a logout without a cookie,
// which must not clear the origin's site data from another site.
func (s *Server) checkOriginIfPresent(r *http.Request) error {
	src := r.Header.Get("Origin")
	if src == "" {
		src = r.Header.Get("Referer")
	}
	if src == "" {
		return nil
	}
	return s.sameHost(r, src)
}

func (s *Server) sameHost(r *http.Request, src string) error {
	u, err := url.Parse(src)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%w: unparsable origin", ErrBadOrigin)
	}
	if u.Scheme != "https" && (s.opts.CookieSecure || u.Scheme != "http") {
		return fmt.Errorf("%w: scheme %q", ErrBadOrigin, u.Scheme)
	}
	if !strings.EqualFold(u.Host, r.Host) {
		return fmt.Errorf("%w: host %q is not %q", ErrBadOrigin, u.Host, r.Host)
	}
	return nil
}
