package authapi

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"github.com/sandgate/sandgate/internal/account"
	"html/template"
	"net/http"
	"time"

	"github.com/sandgate/sandgate/internal/webpage"
)

//go:embed templates/*.html
var templateFS embed.FS

// pageData is everything a page of the templates shows; error and
// other message pages are webpage.Message (errorpage.go).
type pageData struct {
	Page           string // "landing", "token", "recreate" or "delete"
	Title          string
	User           string
	State          string
	AgentURL       string
	Token          string
	InviteRequired bool
	SSOUser        string
	Refresh        bool
	// Facts describe the signed-in user's agent on the landing page.
	Facts [][2]string
	// KeepAwake is how long the account page's keep-awake lasts.
	KeepAwake string
	// WakeAt and WakeRepeat fill the wake schedule form: the schedule's
	// time of day and repeat, empty without one.
	WakeAt, WakeRepeat string
	// Signup and Login are the anonymous landing page's forms as a
	// refusal shows them again.
	Signup, Login formState
	// Next is the deep link a sign-in goes on to (nextOf).
	Next string
	// UserRule says which user names are allowed.
	UserRule string
	// Admin is an admin page's content.
	Admin *adminPage
}

// pages holds the parsed templates and the Content-Security-Policy of
// webpage.CSP: no scripts, no external assets, forms only to this origin
// (and, in subdomain routing, the user origins their redirects end on), no
// framing.
type pages struct {
	tmpl *template.Template
	csp  string
}

func loadPages(formTargets ...string) (*pages, error) {
	tmpl, err := webpage.Templates().ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("parse templates: %w", err)
	}
	return &pages{tmpl: tmpl, csp: webpage.CSP(formTargets...)}, nil
}

// renderPage writes a page of the templates with the security headers
// every page carries.
func (s *Server) renderPage(w http.ResponseWriter, r *http.Request, code int, d pageData) {
	d.UserRule = userRule
	var buf bytes.Buffer
	if err := s.pages.tmpl.ExecuteTemplate(&buf, "page", d); err != nil {
		s.log.Error("render page", "page", d.Page, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	s.writePage(w, r, code, buf.Bytes())
}

// writePage sends a rendered page with the headers of webpage.Headers.
func (s *Server) writePage(w http.ResponseWriter, r *http.Request, code int, page []byte) {
	h := w.Header()
	for _, kv := range webpage.Headers(s.pages.csp) {
		h.Set(kv[0], kv[1])
	}
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write(page)
	}
}

// handleLanding shows signup and sign-in, or the signed-in user's account
// home: the agent's state and facts about it, and the account actions. It
// never shows a bearer token: in path routing an agent's script shares
// this origin and could read the page. A deep link in ?next= (where a
// node proxy sends a signed-out browser) rides along in the sign-in form.
func (s *Server) handleLanding(w http.ResponseWriter, r *http.Request) {
	d := s.anonymousPage(r, r.URL.Query().Get("next"))
	sess, err := s.readSession(w, r)
	switch {
	case err == nil:
		d.Title = "Your account"
		d.User = sess.account.User
		d.State = s.claims.state(r.Context(), sess.claim)
		d.Facts = s.agentFacts(r.Context(), sess.claim, d.State)
		d.KeepAwake = span(s.opts.KeepAwake)
		if w, ok := account.WakeScheduleOf(sess.claim); ok && !w.Next(s.opts.Now()).IsZero() {
			d.WakeAt, d.WakeRepeat = w.At.UTC().Format("15:04"), w.Repeat
		}
		d.AgentURL = agentPath(d.User)
		d.Refresh = d.State == StateWaking || d.State == StateFailed
	case errors.Is(err, ErrNoSession) && s.hasSessionCookie(r):
		// A cookie that can never work again is dropped; a passing failure
		// (keys or API server unavailable) leaves it alone.
		http.SetCookie(w, s.expiredCookie(s.opts.CookieName, http.SameSiteLaxMode))
	}
	s.renderPage(w, r, http.StatusOK, d)
}

// anonymousPage is the landing page with the signup and sign-in forms,
// the sign-in carrying next when it is a deep link nextOf admits.
func (s *Server) anonymousPage(r *http.Request, next string) pageData {
	d := pageData{Page: "landing", Title: "Sign up or sign in", InviteRequired: s.opts.InviteCode != ""}
	if u, ok := s.proxyUser(r); ok {
		d.SSOUser = u
	}
	if n, ok := nextOf(next); ok {
		d.Next = n
	}
	return d
}

// handleRecreateConfirm is the confirmation step before POST /recreate.
func (s *Server) handleRecreateConfirm(w http.ResponseWriter, r *http.Request) {
	sess, err := s.readSession(w, r)
	if err != nil {
		seeOther(w, r, "/")
		return
	}
	s.renderPage(w, r, http.StatusOK, pageData{Page: "recreate", Title: "Recreate your workspace?", User: sess.account.User})
}

// handleDeleteConfirm is the confirmation step before deleting an account.
func (s *Server) handleDeleteConfirm(w http.ResponseWriter, r *http.Request) {
	sess, err := s.readSession(w, r)
	if err != nil {
		seeOther(w, r, "/")
		return
	}
	if r.PathValue("user") != sess.account.User {
		s.fail(w, r, ErrForbidden)
		return
	}
	s.renderPage(w, r, http.StatusOK, pageData{Page: "delete", Title: "Delete your account?", User: sess.account.User})
}

// browserSignupWait bounds how long a browser's signup waits for its
// sandbox: its token page comes at once, and the agent's own starting page
// (served by the node proxy) takes over from there.
const browserSignupWait = time.Second

// signupWait is how long a signup waits for the claim to be Ready: a
// browser about a second, an API client up to WAKE_TIMEOUT.
func (s *Server) signupWait(r *http.Request) time.Duration {
	if browser(r) {
		return min(browserSignupWait, s.opts.WakeTimeout)
	}
	return s.opts.WakeTimeout
}
