package authapi

import (
	"bytes"
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

// errorPage answers a browser's refusal with the message page every
// binary shows (webpage.Message): what happened in words a person can act
// on (pageText) and the next steps.
func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, code int, reason string) {
	title, text := pageText(code, reason)
	var buf bytes.Buffer
	if err := webpage.Render(&buf, webpage.Message{Title: title, Lines: []string{text}, Links: s.nextSteps(w, r, code), Alert: true}); err != nil {
		s.log.Error("render error page", "reason", reason, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	s.writePage(w, r, code, buf.Bytes())
}

// pageText is an error page's title and text for a refusal of status
// code with statusOf's reason.
func pageText(code int, reason string) (title, text string) {
	switch reason {
	case "not_found":
		return "Page not found", "There is no page at this address. Check the link, or go on from the start page."
	case "no_session":
		return "Sign in required", "You are not signed in, or your session has ended. Sign in with your user name and access token."
	case "forbidden":
		return "Not your account", "This page acts on another account: you can only see and change your own."
	case "no_account":
		return "Account not found", "This account no longer exists. You can sign up again on the start page."
	case "bad_origin":
		return "Request refused", "This form was sent from another site, so it was not accepted. Use the forms on this site's own pages."
	case "not_navigation":
		return "Open this from your account page", "A new access token is only shown on a page you open yourself: use the button on your account page."
	case "not_admin":
		return "Admins only", "The admin pages are for the people who run this service. Your own account is on the start page."
	case "admin_not_page":
		return "Open the admin pages yourself", "The admin pages only open as pages you navigate to, never from a script: go to /admin/accounts in the address bar."
	case "bad_form_token":
		return "This form has expired", "Nothing was changed. Open the admin page again and repeat the action from there."
	case "not_confirmed":
		return "Nothing was deleted", "The name you typed did not match your user name. To delete the account, type the name exactly on the delete page."
	case "recreating":
		return "Your workspace is being recreated", "A recreate of this account is under way. Wait a few seconds, then try again."
	case "rate_limited":
		return "Too many attempts", "Too many sign-up or sign-in attempts came from your address. Wait a little, then try again."
	case "too_large":
		return "Too much data", "What the form sent is larger than this service accepts."
	case "bad_request", "unsupported_media":
		return "The form could not be read", "Go back to the start page and send the form again."
	case "bad_invite":
		return "Invite code needed", "Signing up needs the current invite code: ask the people who run this service for it."
	case "exists":
		return "That name is taken", "An account with this name exists. If it is yours, sign in with its access token; if not, sign up with another name."
	case "invalid_user":
		return "User name not allowed", userRule
	case "bad_credentials":
		return "Sign-in failed", "This user name and access token do not open an account. Check both, then sign in again."
	}
	if code >= 500 {
		return "Try again shortly", "The service is starting or cannot reach the cluster right now. Try again in a few seconds."
	}
	return "That did not work", "The request was refused. Go on from the start page."
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
