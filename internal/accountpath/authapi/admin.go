package authapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// adminFormInfo derives the admin form key from the Secret's flash key.
const adminFormInfo = "sandgate admin form v1"

// admin is who an admin request acts for.
type admin struct {
	user string
	auth string // authToken or authSession
	// formToken is the session's admin form token; empty for a bearer
	// token, whose requests no browser makes on its own.
	formToken string
}

// adminOf authenticates an admin request and decides that its account is
// an admin (isAdmin). A bearer token may do anything the admin API offers.
// A session cookie may only open pages: every request must be a
// top-level navigation (Sec-Fetch-Mode navigate, Sec-Fetch-Dest document,
// which no script can set), so an agent's script on the shared origin can
// neither fetch an admin page nor the JSON; each page sends COOP
// same-origin, which cuts off a window the script opened, so it cannot
// read a page either. A form post must also come from this origin and
// carry the session's form token, which only the admin pages show: in is
// the post's body (readInput), empty for a GET.
func (s *Server) adminOf(w http.ResponseWriter, r *http.Request, in input) (admin, error) {
	if tok := bearer(r); tok != "" {
		a, err := s.checkToken("", tok)
		if err != nil {
			return admin{}, err
		}
		if !s.isAdmin(r, a.User) {
			return admin{}, fmt.Errorf("%w: %q", ErrNotAdmin, a.User)
		}
		return admin{user: a.User, auth: authToken}, nil
	}
	sess, err := s.readSession(w, r)
	if err != nil {
		return admin{}, err
	}
	if !s.isAdmin(r, sess.account.User) {
		return admin{}, fmt.Errorf("%w: %q", ErrNotAdmin, sess.account.User)
	}
	if !topLevelNavigation(r) {
		return admin{}, fmt.Errorf("%w: Sec-Fetch-Mode %q, Sec-Fetch-Dest %q", ErrAdminNotPage,
			r.Header.Get("Sec-Fetch-Mode"), r.Header.Get("Sec-Fetch-Dest"))
	}
	token, err := s.adminFormToken(sess.account.User, sess.claims.SessionID)
	if err != nil {
		return admin{}, err
	}
	a := admin{user: sess.account.User, auth: authSession, formToken: token}
	if r.Method == http.MethodPost {
		if err := s.checkOrigin(r); err != nil {
			return admin{}, err
		}
		if !hmac.Equal([]byte(in.FormToken), []byte(token)) {
			return admin{}, ErrBadFormToken
		}
	}
	return a, nil
}

// isAdmin decides whether the account user is an admin: it is listed in
// Admins, or the SSO proxy asserts user on this request and lists one of
// AdminGroups in AdminGroupsHeader. Node proxies pass those headers on only
// from the proven SSO proxy, and drop them from everyone else.
func (s *Server) isAdmin(r *http.Request, user string) bool {
	if slices.Contains(s.opts.Admins, user) {
		return true
	}
	if len(s.opts.AdminGroups) == 0 {
		return false
	}
	if asserted, ok := s.proxyUser(r); !ok || asserted != user {
		return false
	}
	for _, v := range r.Header.Values(s.opts.AdminGroupsHeader) {
		for g := range strings.SplitSeq(v, ",") {
			if slices.Contains(s.opts.AdminGroups, strings.TrimSpace(g)) {
				return true
			}
		}
	}
	return false
}

// adminFormToken is the form token of session sid of user: a MAC the admin
// pages put in their forms, the same on every replica.
func (s *Server) adminFormToken(user, sid string) (string, error) {
	st := s.keys.current()
	if st == nil {
		return "", fmt.Errorf("admin form token: %w: %w", ErrUnavailable, errNoKeys)
	}
	m := hmac.New(sha256.New, st.adminForm)
	m.Write([]byte(user + "\x00" + sid))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)), nil
}
