package authapi

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
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
}

// pages holds the parsed templates and the Content-Security-Policy that
// admits exactly their inline style and nothing else: no scripts, no
// external assets, forms only to this origin (and, in subdomain routing,
// the user origins their redirects end on), no framing.
type pages struct {
	tmpl *template.Template
	csp  string
}

func loadPages(formTargets ...string) (*pages, error) {
	tmpl, err := template.ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("parse templates: %w", err)
	}
	src, err := templateFS.ReadFile("templates/page.html")
	if err != nil {
		return nil, err
	}
	start := bytes.Index(src, []byte("<style>"))
	end := bytes.Index(src, []byte("</style>"))
	if start < 0 || end < start {
		return nil, fmt.Errorf("page template has no <style> element")
	}
	sum := sha256.Sum256(src[start+len("<style>") : end])
	csp := strings.Join([]string{
		"default-src 'none'",
		"style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'",
		strings.Join(append([]string{"form-action 'self'"}, formTargets...), " "),
		"frame-ancestors 'none'",
		"base-uri 'none'",
	}, "; ")
	return &pages{tmpl: tmpl, csp: csp}, nil
}

// renderPage writes a page with the security headers every page carries.
func (s *Server) renderPage(w http.ResponseWriter, r *http.Request, code int, d pageData) {
	if d.Page == "" {
		d.Page = "error"
	}
	var buf bytes.Buffer
	if err := s.pages.tmpl.ExecuteTemplate(&buf, "page", d); err != nil {
		s.log.Error("render page", "page", d.Page, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", s.pages.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		_, _ = w.Write(buf.Bytes())
	}
}

// handleLanding shows signup and login, or the signed-in user's sandbox
// state and the account actions. It never shows a bearer token: in path
// routing an agent's script shares this origin and could read the page.
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
