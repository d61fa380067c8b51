package nodeproxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"
)

// Renewal results, the values of the renewals metric's label.
const (
	renewOK          = "ok"
	renewEnded       = "ended"
	renewError       = "error"
	renewUnreachable = "unreachable"
)

// renewedCacheTTL keeps a renewal's result for the requests that were
// already on their way with the old token.
const renewedCacheTTL = time.Minute

// maxRenewResponse bounds the auth API's answer.
const maxRenewResponse = 16 << 10

// errRenewRefused: the auth API would not renew (session ended).
var errRenewRefused = errors.New("renewal refused")

// renewal is a fresh session token and the Set-Cookie value that carries
// it, remembered until until.
type renewal struct {
	token     string
	setCookie string
	until     time.Time
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err) // only for constant, valid arguments
	}
	return v
}

// renewer asks the auth API for fresh session tokens, and in subdomain
// routing redeems entry codes for origin sessions. Concurrent renewals of
// one token share a call, and the result is remembered briefly.
type renewer struct {
	api                   *authClient
	renewPath, redeemPath string
	cookie                func(name, token string, maxAge int) string
	m                     *metrics
	group                 singleflight.Group
	recent                *lru.Cache[string, renewal]
	now                   func() time.Time
}

func newRenewer(o Options, m *metrics, api *authClient) *renewer {
	return &renewer{
		api:        api,
		renewPath:  o.RenewPath,
		redeemPath: o.RedeemPath,
		cookie: func(name, token string, maxAge int) string {
			c := &http.Cookie{Name: name, Value: token, Path: "/", MaxAge: maxAge, HttpOnly: true,
				Secure: o.CookieSecure, SameSite: http.SameSiteLaxMode}
			return c.String()
		},
		m:      m,
		recent: must(lru.New[string, renewal](4096)),
		now:    time.Now,
	}
}

// renew returns a fresh token for the session token old, carried by the
// cookie called cookieName. Errors never contain either token; while the
// auth API is unreachable they wrap ErrAuthAPIUnavailable.
func (r *renewer) renew(old, cookieName string) (renewal, error) {
	if res, ok := r.recent.Get(old); ok && r.now().Before(res.until) {
		return res, nil
	}
	v, err, _ := r.group.Do(old, func() (any, error) {
		res, err := r.call(callRenew, r.renewPath, map[string]string{"token": old}, cookieName)
		switch {
		case err == nil:
			r.m.renewals.WithLabelValues(renewOK).Inc()
			res.until = r.now().Add(renewedCacheTTL)
			r.recent.Add(old, res)
		case errors.Is(err, errRenewRefused):
			r.m.renewals.WithLabelValues(renewEnded).Inc()
		case errors.Is(err, ErrAuthAPIUnavailable):
			r.m.renewals.WithLabelValues(renewUnreachable).Inc()
		default:
			r.m.renewals.WithLabelValues(renewError).Inc()
		}
		return res, err
	})
	if err != nil {
		return renewal{}, err
	}
	return v.(renewal), nil
}

// redeem trades an entry code brought to origin for an origin session,
// carried by the cookie called cookieName. The auth API accepts each code
// once.
func (r *renewer) redeem(code, origin, cookieName string) (renewal, error) {
	return r.call(callRedeem, r.redeemPath, map[string]string{"code": code, "origin": origin}, cookieName)
}

// renewReply is the auth API's answer to a renewal or a redemption.
type renewReply struct {
	Token     string `json:"token"`
	User      string `json:"user"`
	ExpiresAt int64  `json:"expires_at"`
	MaxAge    int    `json:"max_age"`
	SetCookie string `json:"set_cookie"`
}

// call asks the auth API for a session token at path and reads its
// answer.
func (r *renewer) call(what, path string, in map[string]string, cookieName string) (renewal, error) {
	body, _ := json.Marshal(in) // a string map always encodes
	var res renewal
	err := r.api.guarded(what, path, body, func(resp *http.Response) error {
		var err error
		res, err = r.read(resp, cookieName)
		return err
	})
	return res, err
}

// read turns the auth API's answer into a renewal.
func (r *renewer) read(resp *http.Response, cookieName string) (renewal, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxRenewResponse))
	if err != nil {
		return renewal{}, &unreachableError{cause: "read response"}
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized, resp.StatusCode == http.StatusForbidden, resp.StatusCode == http.StatusGone:
		return renewal{}, fmt.Errorf("%w: status %d", errRenewRefused, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return renewal{}, fmt.Errorf("%w: auth API status %d", ErrUpstream, resp.StatusCode)
	}
	var reply renewReply
	if err := json.Unmarshal(data, &reply); err != nil || reply.Token == "" || !validCookieValue([]byte(reply.Token)) {
		return renewal{}, fmt.Errorf("%w: malformed auth API response", ErrUpstream)
	}
	set := reply.SetCookie
	if set == "" || !strings.HasPrefix(set, cookieName+"="+reply.Token) || !printable([]byte(set)) {
		set = r.cookie(cookieName, reply.Token, max(reply.MaxAge, 1))
	}
	return renewal{token: reply.Token, setCookie: set}, nil
}

// FileToken returns a ServiceAccountToken function that reads a projected
// token file, re-reading it at most every refresh (the kubelet rotates it).
func FileToken(path string, refresh time.Duration) func() (string, error) {
	var (
		mu   sync.Mutex
		tok  string
		read time.Time
	)
	return func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		if tok != "" && time.Since(read) < refresh {
			return tok, nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("read service account token: %w", err)
		}
		t := strings.TrimSpace(string(data))
		if t == "" {
			return "", fmt.Errorf("service account token file %s is empty", path)
		}
		tok, read = t, time.Now()
		return tok, nil
	}
}
