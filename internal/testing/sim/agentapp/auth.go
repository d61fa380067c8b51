package agentapp

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Auth cookie values are a random nonce and its truncated HMAC under a
// per-process key: any number of logins stay valid for the process lifetime
// without a table, and a restarted App (new key) refuses them all.
const (
	cookieNonceLen = 16
	cookieMACLen   = 16
)

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b) // never fails since Go 1.24
	return b
}

// newToken returns a launch token: 32 random bytes, base64url, no padding.
func newToken() string {
	return base64.RawURLEncoding.EncodeToString(randomBytes(32))
}

// writeTokenFile writes the launch token to Options.TokenFile, if set:
// through a temporary file renamed into place, so a reader never sees half
// a token, and readable by its owner only.
func (a *App) writeTokenFile() error {
	if a.opts.TokenFile == "" {
		return nil
	}
	dir := filepath.Dir(a.opts.TokenFile)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create token file directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".token-*")
	if err != nil {
		return fmt.Errorf("create token file: %w", err)
	}
	_, err = tmp.WriteString(a.token + "\n")
	err = errors.Join(err, tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), a.opts.TokenFile)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write token file: %w", err)
	}
	return nil
}

// newInstanceID returns the short id that names this process's cookie.
func newInstanceID() string {
	return hex.EncodeToString(randomBytes(4))
}

func (a *App) cookieMAC(nonce []byte) []byte {
	m := hmac.New(sha256.New, a.cookieKey)
	m.Write(nonce)
	return m.Sum(nil)[:cookieMACLen]
}

func (a *App) newCookieValue() string {
	nonce := randomBytes(cookieNonceLen)
	return base64.RawURLEncoding.EncodeToString(append(nonce, a.cookieMAC(nonce)...))
}

func (a *App) validCookieValue(v string) bool {
	raw, err := base64.RawURLEncoding.DecodeString(v)
	if err != nil || len(raw) != cookieNonceLen+cookieMACLen {
		return false
	}
	return hmac.Equal(raw[cookieNonceLen:], a.cookieMAC(raw[:cookieNonceLen]))
}

// authorized reports whether r carries a cookie this process issued.
func (a *App) authorized(r *http.Request) bool {
	for _, c := range r.CookiesNamed(a.cookieName) {
		if a.validCookieValue(c.Value) {
			return true
		}
	}
	return false
}

// exchangeToken answers GET /?token=<t>: the right token gets a 303 to / and
// a fresh auth cookie; anything else gets 401. The token stays valid, so a
// proxy may repeat the exchange after a 401.
func (a *App) exchangeToken(w http.ResponseWriter, r *http.Request) {
	got := r.URL.Query().Get("token")
	if r.Method != http.MethodGet && r.Method != http.MethodHead ||
		subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) != 1 {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name:     a.cookieName,
		Value:    a.newCookieValue(),
		Path:     "/",
		HttpOnly: true,
		SameSite: http.SameSiteLaxMode,
	})
	w.Header().Set("Location", "/")
	w.WriteHeader(http.StatusSeeOther)
}

// canonicalHost returns the lower-case host of a Host header or a trusted
// host entry, without port, brackets or trailing dot.
func canonicalHost(hostport string) string {
	h := strings.TrimSpace(hostport)
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// listenIP returns the IP of a TCP listen address unless it is unspecified.
func listenIP(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP == nil || tcp.IP.IsUnspecified() {
		return ""
	}
	return canonicalHost(tcp.IP.String())
}

func (a *App) trustedList() []string {
	hosts := make([]string, 0, len(a.trusted))
	for h := range a.trusted {
		hosts = append(hosts, h)
	}
	slices.Sort(hosts)
	return hosts
}
