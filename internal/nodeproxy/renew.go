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
// routing redeems entry codes for origin sessions, authenticating with
// this proxy's ServiceAccount token. Concurrent renewals of one token share
// a call, and the result is remembered briefly.
type renewer struct {
	url, redeemURL string
	client         *http.Client
	saToken        func() (string, error)
	timeout        time.Duration
	cookie         func(name, token string, maxAge int) string
	m              *metrics
	group          singleflight.Group
	recent         *lru.Cache[string, renewal]
	now            func() time.Time
	reach          *reachability
}

func newRenewer(o Options, m *metrics, client *http.Client) *renewer {
	base := strings.TrimSuffix(o.AuthAPIInternal, "/")
	return &renewer{
		url:       base + o.RenewPath,
		redeemURL: base + o.RedeemPath,
		client:    client,
		saToken:   o.ServiceAccountToken,
		timeout:   o.RenewTimeout,
		cookie: func(name, token string, maxAge int) string {
			c := &http.Cookie{Name: name, Value: token, Path: "/", MaxAge: maxAge, HttpOnly: true,
				Secure: o.CookieSecure, SameSite: http.SameSiteLaxMode}
			return c.String()
		},
		m:      m,
		recent: must(lru.New[string, renewal](4096)),
		now:    time.Now,
		reach:  newReachability(o, m),
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
		res, err := r.reachable(callRenew, r.url, map[string]string{"token": old}, cookieName)
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
	return r.reachable(callRedeem, r.redeemURL, map[string]string{"code": code, "origin": origin}, cookieName)
}

// reachable is call unless the auth API was found unreachable moments
// ago, and records whether it answered.
func (r *renewer) reachable(what, url string, in map[string]string, cookieName string) (renewal, error) {
	if err := r.reach.check(what); err != nil {
		return renewal{}, err
	}
	res, err := r.call(url, in, cookieName)
	var down *unreachableError
	switch {
	case errors.As(err, &down):
		return renewal{}, r.reach.failed(what, down.cause)
	case err == nil, errors.Is(err, errRenewRefused), errors.Is(err, ErrUpstream):
		r.reach.reached() // an answer, welcome or not
	}
	return res, err
}

// unreachableError is a call that no auth API replica answered.
type unreachableError struct{ cause string }

func (e *unreachableError) Error() string { return "auth API unreachable: " + e.cause }

// renewReply is the auth API's answer to a renewal or a redemption.
type renewReply struct {
	Token     string `json:"token"`
	User      string `json:"user"`
	ExpiresAt int64  `json:"expires_at"`
	MaxAge    int    `json:"max_age"`
	SetCookie string `json:"set_cookie"`
}

func (r *renewer) call(url string, in map[string]string, cookieName string) (renewal, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	body, _ := json.Marshal(in) // a string map always encodes
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return renewal{}, fmt.Errorf("build auth API request: %w", err)
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
		return renewal{}, &unreachableError{cause: "call failed"}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxRenewResponse))
	if err != nil {
		return renewal{}, &unreachableError{cause: "read response"}
	}
	switch {
	case unreachableStatus(resp.StatusCode):
		return renewal{}, &unreachableError{cause: fmt.Sprintf("status %d", resp.StatusCode)}
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
