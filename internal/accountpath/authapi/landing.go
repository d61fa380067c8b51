package authapi

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"time"

	"github.com/sandgate/sandgate/internal/webpage"
)

//go:embed templates/*.html
var templateFS embed.FS

// pageData is everything a page shows.
type pageData struct {
	Page           string // "landing", "token", "recreate", "delete" or "error"
	Status         int
	Error          string
	User           string
	State          string
	AgentURL       string
	Token          string
	InviteRequired bool
	SSOUser        string
	Refresh        bool
	// Facts describe the signed-in user's agent on the landing page.
	Facts [][2]string
	// Heading and Links are an error page's title and next steps.
	Heading string
	Links   []webpage.Link
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

// renderPage writes a page with the security headers every page carries.
func (s *Server) renderPage(w http.ResponseWriter, r *http.Request, code int, d pageData) {
	if d.Page == "" {
		d.Page = "error"
	}
	if d.Page == "error" {
		d.Heading = errorHeading(code)
		if d.Links == nil {
			d.Links = s.nextSteps(w, r, code)
		}
	}
	var buf bytes.Buffer
	if err := s.pages.tmpl.ExecuteTemplate(&buf, "page", d); err != nil {
		s.log.Error("render page", "page", d.Page, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	for _, kv := range webpage.Headers(s.pages.csp) {
		h.Set(kv[0], kv[1])
	}
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// handleLanding shows signup and login, or the signed-in user's account
// home: the agent's state and facts about it, and the account actions. It
// never shows a bearer token: in path routing an agent's script shares
// this origin and could read the page.
func (s *Server) handleLanding(w http.ResponseWriter, r *http.Request) {
	d := pageData{Page: "landing", InviteRequired: s.opts.InviteCode != ""}
	if u, ok := s.proxyUser(r); ok {
		d.SSOUser = u
	}
	sess, err := s.readSession(w, r)
	switch {
	case err == nil:
		d.User = sess.account.User
		d.State = s.claims.state(r.Context(), sess.claim)
		d.Facts = s.agentFacts(r.Context(), sess.claim, d.State)
		d.AgentURL = agentPath(d.User)
		d.Refresh = d.State == StateWaking || d.State == StateFailed
	case errors.Is(err, ErrNoSession) && s.hasSessionCookie(r):
		// A cookie that can never work again is dropped; a passing failure
		// (keys or API server unavailable) leaves it alone.
		http.SetCookie(w, s.expiredCookie(s.opts.CookieName, http.SameSiteLaxMode))
	}
	s.renderPage(w, r, http.StatusOK, d)
}

// handleRecreateConfirm is the confirmation step before POST /recreate.
func (s *Server) handleRecreateConfirm(w http.ResponseWriter, r *http.Request) {
	sess, err := s.readSession(w, r)
	if err != nil {
		seeOther(w, r, "/")
		return
	}
	s.renderPage(w, r, http.StatusOK, pageData{Page: "recreate", User: sess.account.User})
}

// handleDeleteConfirm is the confirmation step before deleting an account.
func (s *Server) handleDeleteConfirm(w http.ResponseWriter, r *http.Request) {
	sess, err := s.readSession(w, r)
	if err != nil {
		seeOther(w, r, "/")
		return
	}
	if r.PathValue("user") != sess.account.User {
		s.renderPage(w, r, http.StatusForbidden, pageData{Error: ErrForbidden.Error()})
		return
	}
	s.renderPage(w, r, http.StatusOK, pageData{Page: "delete", User: sess.account.User})
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
