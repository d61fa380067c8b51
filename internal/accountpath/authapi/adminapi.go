package authapi

import (
	"bytes"
	"net/http"
	"net/url"
	"strconv"

	"github.com/sandgate/sandgate/internal/account"
)

// adminPage is what the admin templates show.
type adminPage struct {
	Admin     string
	FormToken string
	Query     accountQuery
	States    []string
	List      accountPage
	// PrevPage and NextPage link the list's neighbouring pages.
	PrevPage, NextPage string
	Account            *accountRow
	Events             []auditRecord
	// Done names the action just done on Account.
	Done string
	// Token is a new token for Account's owner, shown once.
	Token string
}

// adminAccountAnswer is the JSON of one account for the admin API.
type adminAccountAnswer struct {
	accountRow
	// Events are the account's recent audit events this replica wrote.
	Events []auditRecord `json:"events"`
}

// handleAdminList lists accounts (GET /admin/accounts?state=&q=&page=&per_page=):
// JSON for the admin API, the admin page for a browser.
func (s *Server) handleAdminList(w http.ResponseWriter, r *http.Request) {
	ad, err := s.adminOf(w, r, input{})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q, err := accountQueryOf(r.URL.Query())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	list := s.listAccounts(r.Context(), q)
	if ad.auth != authSession {
		writeJSON(w, http.StatusOK, list)
		return
	}
	p := adminPage{Admin: ad.user, FormToken: ad.formToken, Query: q, States: allStates, List: list}
	if q.Page > 1 {
		p.PrevPage = listLink(q, q.Page-1)
	}
	if q.Page < list.Pages {
		p.NextPage = listLink(q, q.Page+1)
	}
	s.renderAdmin(w, r, "Accounts", "admin_list", p)
}

// listLink is the admin list's address for page of q.
func listLink(q accountQuery, page int) string {
	v := url.Values{}
	if q.State != "" {
		v.Set("state", q.State)
	}
	if q.Search != "" {
		v.Set("q", q.Search)
	}
	if q.PerPage != defaultPerPage {
		v.Set("per_page", strconv.Itoa(q.PerPage))
	}
	v.Set("page", strconv.Itoa(page))
	return "/admin/accounts?" + v.Encode()
}

// handleAdminAccount shows one account (GET /admin/accounts/{user}): its
// row, its recent audit events and, on the page, the actions.
func (s *Server) handleAdminAccount(w http.ResponseWriter, r *http.Request) {
	ad, err := s.adminOf(w, r, input{})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	user := r.PathValue("user")
	if err := account.ValidateUser(user); err != nil {
		s.fail(w, r, invalidUser(err))
		return
	}
	row, ok := s.adminAccount(r.Context(), user)
	if !ok {
		s.fail(w, r, ErrNoAccount)
		return
	}
	events := s.recent.of(user)
	if ad.auth != authSession {
		writeJSON(w, http.StatusOK, adminAccountAnswer{accountRow: row, Events: append([]auditRecord{}, events...)})
		return
	}
	p := adminPage{Admin: ad.user, FormToken: ad.formToken, Account: &row, Events: events}
	if done := r.URL.Query().Get("done"); adminActions[done] != nil {
		p.Done = done
	}
	s.renderAdmin(w, r, user, "admin_account", p)
}

// renderAdmin writes an admin page: the account pages' headers, and COOP
// same-origin, which cuts off a window an agent's script opened on it.
func (s *Server) renderAdmin(w http.ResponseWriter, r *http.Request, title, page string, p adminPage) {
	var buf bytes.Buffer
	if err := s.pages.tmpl.ExecuteTemplate(&buf, "page", pageData{Page: page, Title: title, Admin: &p}); err != nil {
		s.log.Error("render admin page", "page", page, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Cross-Origin-Opener-Policy", "same-origin")
	s.writePage(w, r, http.StatusOK, buf.Bytes())
}

// handleAdminHome sends /admin to the account list.
func (s *Server) handleAdminHome(w http.ResponseWriter, r *http.Request) {
	seeOther(w, r, "/admin/accounts")
}
