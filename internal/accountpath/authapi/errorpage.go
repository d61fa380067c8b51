package authapi

import (
	"net/http"
	"strings"

	"github.com/sandgate/sandgate/internal/webpage"
)

// nextSteps are the links an error page of status code offers: sign in
// after a 401, one's own agent after a 403 (when the browser is signed in
// as someone), the start page after a 404, and trying again after a 429 or
// 503 once Retry-After (already on w) has passed.
func (s *Server) nextSteps(w http.ResponseWriter, r *http.Request, code int) []webpage.Link {
	home := webpage.Link{Href: "/", Text: "Back to the start page", Secondary: true}
	switch code {
	case http.StatusUnauthorized:
		return []webpage.Link{{Href: "/", Text: "Sign in"}}
	case http.StatusForbidden, http.StatusNotFound:
		if user, ok := s.cookieUser(r); ok {
			return []webpage.Link{{Href: agentPath(user), Text: "Open your own agent"}, home}
		}
		return []webpage.Link{home}
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		text := "Try again"
		if v := w.Header().Get("Retry-After"); v != "" {
			text = "Try again in " + v + " s"
		}
		return []webpage.Link{{Href: retryTarget(r), Text: text}, home}
	}
	return []webpage.Link{home}
}

// errorHeading says in a few words what an error page's status means.
func errorHeading(code int) string {
	switch code {
	case http.StatusUnauthorized:
		return "Sign in required"
	case http.StatusForbidden:
		return "Not allowed"
	case http.StatusNotFound:
		return "Not found"
	case http.StatusTooManyRequests:
		return "Too many attempts"
	case http.StatusServiceUnavailable:
		return "Try again shortly"
	}
	if code >= 500 {
		return "Something went wrong"
	}
	return "That did not work"
}

// cookieUser names the user of the session cookie, if it verifies (expired
// or not). It only chooses a link: access is decided elsewhere.
func (s *Server) cookieUser(r *http.Request) (string, bool) {
	ck, err := r.Cookie(s.opts.CookieName)
	if err != nil || ck.Value == "" {
		return "", false
	}
	c, err := s.verifier.VerifyIgnoringExpiry(ck.Value)
	if err != nil {
		return "", false
	}
	return c.User, true
}

// retryTarget is where "try again" leads: the same page for a GET of a
// plain local path, the start page otherwise (a form post is not repeated
// by a link).
func retryTarget(r *http.Request) string {
	p := r.URL.Path
	if r.Method != http.MethodGet || !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\") {
		return "/"
	}
	return p
}

// notFoundPage answers a browser's GET of a path no route serves with the
// 404 page; everything else, including a known path asked for with another
// method (405), is mux's own answer.
func (s *Server) notFoundPage(mux *http.ServeMux) http.Handler {
	route := s.route("not_found", func(w http.ResponseWriter, r *http.Request) { s.fail(w, r, ErrNotFound) })
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && browser(r) && !routed(mux, r) {
			route.ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// routed reports whether some route serves r's path, with any method.
func routed(mux *http.ServeMux, r *http.Request) bool {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "" {
			return true
		}
	}
	return false
}
