package nodeproxy

import (
	"bytes"
	"context"
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
	renewOK    = "ok"
	renewEnded = "ended"
	renewError = "error"
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

// renewer asks the auth API for fresh session tokens, authenticating with
// this proxy's ServiceAccount token. Concurrent renewals of one token share
// a call, and the result is remembered briefly.
type renewer struct {
	url        string
	client     *http.Client
	saToken    func() (string, error)
	timeout    time.Duration
	cookieName string
	cookie     func(token string, maxAge int) string
	m          *metrics
	group      singleflight.Group
	recent     *lru.Cache[string, renewal]
	now        func() time.Time
}

func newRenewer(o Options, m *metrics, client *http.Client) *renewer {
	return &renewer{
		url:        strings.TrimSuffix(o.AuthAPI, "/") + o.RenewPath,
		client:     client,
		saToken:    o.ServiceAccountToken,
		timeout:    o.RenewTimeout,
		cookieName: o.CookieName,
		cookie: func(token string, maxAge int) string {
			c := &http.Cookie{Name: o.CookieName, Value: token, Path: "/", MaxAge: maxAge, HttpOnly: true,
				Secure: o.CookieSecure, SameSite: http.SameSiteLaxMode}
			return c.String()
		},
		m:      m,
		recent: must(lru.New[string, renewal](4096)),
		now:    time.Now,
	}
}

// renew returns a fresh token for the session token old. Errors never
// contain either token.
func (r *renewer) renew(old string) (renewal, error) {
	if res, ok := r.recent.Get(old); ok && r.now().Before(res.until) {
		return res, nil
	}
	v, err, _ := r.group.Do(old, func() (any, error) {
		res, err := r.call(old)
		switch {
		case err == nil:
			r.m.renewals.WithLabelValues(renewOK).Inc()
			res.until = r.now().Add(renewedCacheTTL)
			r.recent.Add(old, res)
		case errors.Is(err, errRenewRefused):
			r.m.renewals.WithLabelValues(renewEnded).Inc()
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

// renewReply is the auth API's answer to a renewal.
type renewReply struct {
	Token     string `json:"token"`
	User      string `json:"user"`
	ExpiresAt int64  `json:"expires_at"`
	MaxAge    int    `json:"max_age"`
	SetCookie string `json:"set_cookie"`
}

func (r *renewer) call(old string) (renewal, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	body, _ := json.Marshal(map[string]string{"token": old}) // a string map always encodes
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return renewal{}, fmt.Errorf("build renewal request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if r.saToken != nil {
		sa, err := r.saToken()
		if err != nil {
			return renewal{}, fmt.Errorf("read service account token: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+sa)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return renewal{}, fmt.Errorf("%w: renewal call failed", ErrUpstream)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxRenewResponse))
	if err != nil {
		return renewal{}, fmt.Errorf("%w: read renewal response", ErrUpstream)
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized, resp.StatusCode == http.StatusForbidden:
		return renewal{}, fmt.Errorf("%w: status %d", errRenewRefused, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return renewal{}, fmt.Errorf("%w: renewal status %d", ErrUpstream, resp.StatusCode)
	}
	var reply renewReply
	if err := json.Unmarshal(data, &reply); err != nil || reply.Token == "" || !validCookieValue([]byte(reply.Token)) {
		return renewal{}, fmt.Errorf("%w: malformed renewal response", ErrUpstream)
	}
	set := reply.SetCookie
	if set == "" || !strings.HasPrefix(set, r.cookieName+"="+reply.Token) || !printable([]byte(set)) {
		set = r.cookie(reply.Token, max(reply.MaxAge, 1))
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
