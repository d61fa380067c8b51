package authapi

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/webpage"
)

// The token view shows a browser the bearer token its signup, recreate or
// token rotation just made, once, on a GET of its own
// (GET /users/<user>/token) that the form's answer redirects to, so no
// reload repeats the request. The token waits for that GET in a cookie:
// sealed with AES-GCM under a key every replica derives from the signing
// Secret's flash-key (so any replica opens it and nothing is stored),
// bound to the cookie's name and the user, valid for tokenViewTTL,
// HttpOnly, SameSite=Strict and scoped to the view's path, so neither
// scripts nor agents' paths ever see it. The view clears it, so the token
// shows once; a reload says so.
const (
	tokenCookieBase = "sandgate_new_token"
	// tokenViewTTL bounds how long a new token waits for its view: the
	// browser follows the redirect at once.
	tokenViewTTL  = time.Minute
	tokenViewInfo = "sandgate token view v1"
)

// tokenViewCipher derives the token view's AEAD from the flash key.
func tokenViewCipher(flashKey []byte) (cipher.AEAD, error) {
	key, err := hkdf.Key(sha256.New, flashKey, nil, tokenViewInfo, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// tokenViewPath is where user's new token is shown.
func tokenViewPath(user string) string { return "/users/" + user + "/token" }

func (s *Server) tokenCookieName() string {
	if s.opts.CookieSecure {
		return "__Secure-" + tokenCookieBase
	}
	return tokenCookieBase
}

// tokenBinding is the associated data of a sealed token: it opens only
// under this cookie name, for this user.
func (s *Server) tokenBinding(user string) []byte {
	return []byte(s.tokenCookieName() + "\x00" + user)
}

// tokenCookie seals user's new token into the token view's cookie.
func (s *Server) tokenCookie(user, token string) (*http.Cookie, error) {
	st := s.keys.current()
	if st == nil {
		return nil, fmt.Errorf("seal a new token: %w: keys not loaded", ErrUnavailable)
	}
	plain := strconv.FormatInt(s.opts.Now().Add(tokenViewTTL).Unix(), 10) + " " + token
	nonce := make([]byte, st.view.NonceSize())
	rand.Read(nonce)
	sealed := st.view.Seal(nonce, nonce, []byte(plain), s.tokenBinding(user))
	ck := s.tokenCookieFor(user, int(tokenViewTTL/time.Second))
	ck.Value = base64.RawURLEncoding.EncodeToString(sealed)
	return ck, nil
}

// tokenCookieFor is the token view cookie of user without its value;
// maxAge -1 deletes it.
func (s *Server) tokenCookieFor(user string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name: s.tokenCookieName(), Path: tokenViewPath(user), MaxAge: maxAge,
		HttpOnly: true, Secure: s.opts.CookieSecure, SameSite: http.SameSiteStrictMode,
	}
}

// openTokenCookie returns the token r's cookie holds for user, if it opens
// and has not expired.
func (s *Server) openTokenCookie(r *http.Request, user string) (string, bool) {
	ck, err := r.Cookie(s.tokenCookieName())
	st := s.keys.current()
	if err != nil || st == nil {
		return "", false
	}
	sealed, err := base64.RawURLEncoding.DecodeString(ck.Value)
	n := st.view.NonceSize()
	if err != nil || len(sealed) < n {
		return "", false
	}
	plain, err := st.view.Open(nil, sealed[:n], sealed[n:], s.tokenBinding(user))
	if err != nil {
		return "", false
	}
	exp, token, ok := strings.Cut(string(plain), " ")
	until, err := strconv.ParseInt(exp, 10, 64)
	if !ok || err != nil || token == "" || s.opts.Now().Unix() >= until {
		return "", false
	}
	return token, true
}

// handleTokenView shows user's new token once and clears its cookie; with
// no token to show (a reload, a second tab, an expired cookie) it says the
// token was shown once and what to do if it is lost (410). Only a
// top-level navigation may open it (checkViewNavigation), so an agent's
// script on the shared origin neither reads the token nor spends the
// cookie; the page's Cross-Origin-Opener-Policy cuts off a window an
// agent's script opened on it, as for every page that shows a token.
func (s *Server) handleTokenView(w http.ResponseWriter, r *http.Request) {
	user := r.PathValue("user")
	if account.ValidateUser(user) != nil {
		s.fail(w, r, ErrNotFound)
		return
	}
	if err := checkViewNavigation(r); err != nil {
		s.fail(w, r, err)
		return
	}
	token, ok := s.openTokenCookie(r, user)
	http.SetCookie(w, s.tokenCookieFor(user, -1))
	w.Header().Set("Cross-Origin-Opener-Policy", "same-origin")
	if !ok {
		s.shownOnce(w, r, user)
		return
	}
	s.renderPage(w, r, http.StatusOK, pageData{Page: "token", Title: "Your new access token", User: user, Token: token, AgentURL: agentPath(user)})
}

// checkViewNavigation refuses a token view that is not a GET the browser
// navigates to as a document: a script's fetch, a frame, a HEAD. A
// browser that sends no fetch metadata (plain HTTP outside localhost) is
// let through, or its signup could never show the token; there the
// cookie's short life and single use are the defence.
func checkViewNavigation(r *http.Request) error {
	mode, dest := r.Header.Get("Sec-Fetch-Mode"), r.Header.Get("Sec-Fetch-Dest")
	if r.Method == http.MethodGet && (mode == "" || mode == "navigate") && (dest == "" || dest == "document") {
		return nil
	}
	return fmt.Errorf("%w: token view by %s, Sec-Fetch-Mode %q, Sec-Fetch-Dest %q", ErrNotNavigation, r.Method, mode, dest)
}

// shownOnce answers a token view with no token to show.
func (s *Server) shownOnce(w http.ResponseWriter, r *http.Request, user string) {
	var buf bytes.Buffer
	err := webpage.Render(&buf, webpage.Message{
		Title: "This token was shown once",
		Lines: []string{
			"A new access token appears only the first time this page opens. It is stored nowhere, so it cannot be shown again, and reloading this page makes no new one.",
			"Saved it? Then there is nothing more to do. Lost it? Where you are still signed in, replace it on your account page: the old one stops working and the new one is shown once. Signed out everywhere and without the token, ask the people who run this service for help.",
		},
		Links: []webpage.Link{{Href: "/", Text: "Go to my account page"}, {Href: agentPath(user), Text: "Open my agent", Secondary: true}},
	})
	if err != nil {
		s.log.Error("render the token view", "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	s.writePage(w, r, http.StatusGone, buf.Bytes())
}
