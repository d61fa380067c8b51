package authapi

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// flashName is the cookie that carries a new bearer token to the landing
// page once.
const flashName = "dsh_gw_flash"

// flash is the sealed content of the flash cookie.
type flash struct {
	User   string `json:"u"`
	Token  string `json:"t"`
	Expiry int64  `json:"e"`
}

var errBadFlash = errors.New("bad flash cookie")

func (s *Server) flashCookieName() string {
	if s.opts.CookieSecure {
		return securePrefix + flashName
	}
	return flashName
}

// flashCookie seals f (AES-GCM, key derived from the signing Secret, the
// cookie name as associated data) into a short-lived, strict cookie.
func (s *Server) flashCookie(f flash) (*http.Cookie, error) {
	st := s.keys.current()
	if st == nil {
		return nil, ErrUnavailable
	}
	f.Expiry = s.opts.Now().Add(s.opts.FlashTTL).Unix()
	plain, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, st.flash.NonceSize())
	rand.Read(nonce)
	sealed := st.flash.Seal(nonce, nonce, plain, []byte(s.flashCookieName()))
	return &http.Cookie{
		Name: s.flashCookieName(), Value: base64.RawURLEncoding.EncodeToString(sealed), Path: "/",
		MaxAge: int(s.opts.FlashTTL / time.Second), HttpOnly: true, Secure: s.opts.CookieSecure, SameSite: http.SameSiteStrictMode,
	}, nil
}

// readFlash opens the flash cookie of r, if any and still current.
func (s *Server) readFlash(r *http.Request) (flash, error) {
	ck, err := r.Cookie(s.flashCookieName())
	if err != nil {
		return flash{}, errBadFlash
	}
	st := s.keys.current()
	if st == nil {
		return flash{}, errBadFlash
	}
	sealed, err := base64.RawURLEncoding.DecodeString(ck.Value)
	n := st.flash.NonceSize()
	if err != nil || len(sealed) < n {
		return flash{}, errBadFlash
	}
	plain, err := st.flash.Open(nil, sealed[:n], sealed[n:], []byte(s.flashCookieName()))
	if err != nil {
		return flash{}, errBadFlash
	}
	var f flash
	if err := json.Unmarshal(plain, &f); err != nil || s.opts.Now().Unix() >= f.Expiry {
		return flash{}, errBadFlash
	}
	return f, nil
}
