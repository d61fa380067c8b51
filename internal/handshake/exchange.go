package handshake

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// Limits of the one response the exchange reads.
const (
	exchangeReadBuffer  = 16 << 10 // room for several Set-Cookie headers
	exchangeMaxBodySize = 64 << 10
)

// exchanger trades a launch token for the app's auth cookies. Its client is
// built once and shared by all pods.
type exchanger struct {
	client  *fasthttp.Client
	prefix  []byte // cookie name prefix, e.g. "dsh-auth-"
	timeout time.Duration
	now     func() time.Time // for cookie expiry only; deadlines use time.Now
}

func newExchanger(o Options, now func() time.Time) *exchanger {
	return &exchanger{
		client: &fasthttp.Client{
			Name:                      "sandgate-handshake",
			Dial:                      o.Dial,
			ReadTimeout:               o.Timeout,
			WriteTimeout:              o.Timeout,
			MaxIdleConnDuration:       time.Second,
			MaxIdemponentCallAttempts: 1,
			ReadBufferSize:            exchangeReadBuffer,
			MaxResponseBodySize:       exchangeMaxBodySize,
			DisablePathNormalizing:    true,
		},
		prefix:  []byte(o.CookiePrefix),
		timeout: o.Timeout,
		now:     now,
	}
}

// upstreamCookie is the result of one exchange.
type upstreamCookie struct {
	header  string    // Cookie header value: name=value; name2=value2
	expires time.Time // earliest cookie expiry; zero when none was given
}

// exchange sends GET /?token=<token> to t.Addr with the browser's Host and
// the forwarded headers and collects the auth cookies of the redirect. A
// 401 is ErrTokenRefused: the app does not know that token. Errors never
// include the token, the cookies or the request URI.
func (e *exchanger) exchange(ctx context.Context, t Target, token string) (upstreamCookie, error) {
	req := fasthttp.AcquireRequest()
	resp := fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)

	req.SetRequestURI("http://" + t.Addr + "/?token=" + url.QueryEscape(token))
	req.Header.SetMethod(fasthttp.MethodGet)
	req.UseHostHeader = true
	req.Header.SetHost(cmp.Or(t.Host, t.Addr))
	setIf(req, "X-Forwarded-For", t.ForwardedFor)
	setIf(req, "X-Forwarded-Proto", t.ForwardedProto)
	setIf(req, "X-Forwarded-Host", t.ForwardedHost)
	// One request per handshake: keep no idle connection to the pod.
	req.SetConnectionClose()

	deadline := time.Now().Add(e.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := e.client.DoDeadline(req, resp, deadline); err != nil {
		return upstreamCookie{}, fmt.Errorf("%w: %s", ErrExchange, transportFailure(err))
	}
	status := resp.StatusCode()
	if status == fasthttp.StatusUnauthorized {
		return upstreamCookie{}, fmt.Errorf("%w: %w: status %d", ErrExchange, ErrTokenRefused, status)
	}
	if status < 300 || status > 399 {
		return upstreamCookie{}, fmt.Errorf("%w: status %d", ErrExchange, status)
	}
	c, ok := e.collect(resp)
	if !ok {
		return upstreamCookie{}, ErrNoCookie
	}
	return c, nil
}

// collect builds the Cookie header value from the response's Set-Cookie
// headers whose name has the prefix. A later cookie of the same name
// replaces an earlier one; cookies being deleted are skipped.
func (e *exchanger) collect(resp *fasthttp.Response) (upstreamCookie, bool) {
	type pair struct{ name, value string }
	var (
		pairs   []pair
		expires time.Time
	)
	now := e.now()
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	for name, raw := range resp.Header.Cookies() {
		if !bytes.HasPrefix(name, e.prefix) {
			continue
		}
		c.Reset()
		if err := c.ParseBytes(raw); err != nil {
			continue
		}
		if !bytes.Equal(c.Key(), name) || !validCookieName(c.Key()) || !validCookieValue(c.Value()) {
			continue
		}
		exp := time.Time{}
		switch {
		case c.MaxAge() < 0:
			continue
		case c.MaxAge() > 0:
			exp = now.Add(time.Duration(c.MaxAge()) * time.Second)
		case c.Expire() != fasthttp.CookieExpireUnlimited:
			exp = c.Expire()
			if !exp.After(now) {
				continue
			}
		}
		if !exp.IsZero() && (expires.IsZero() || exp.Before(expires)) {
			expires = exp
		}
		p := pair{string(c.Key()), string(c.Value())}
		if i := slices.IndexFunc(pairs, func(q pair) bool { return q.name == p.name }); i >= 0 {
			pairs[i] = p
		} else {
			pairs = append(pairs, p)
		}
	}
	if len(pairs) == 0 {
		return upstreamCookie{}, false
	}
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.name)
		b.WriteByte('=')
		b.WriteString(p.value)
	}
	return upstreamCookie{header: b.String(), expires: expires}, true
}

// transportFailure describes a failed request without quoting its error:
// fasthttp's parse errors can carry bytes of the response, and so cookies.
func transportFailure(err error) string {
	var op *net.OpError
	switch {
	case errors.Is(err, fasthttp.ErrTimeout), errors.Is(err, os.ErrDeadlineExceeded):
		return "timeout"
	case errors.As(err, &op):
		var errno syscall.Errno
		if errors.As(op.Err, &errno) {
			return op.Op + ": " + errno.Error()
		}
		return op.Op + " failed"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, fasthttp.ErrConnectionClosed):
		return "connection closed early"
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return "response body too large"
	}
	return "malformed response"
}

func setIf(req *fasthttp.Request, name, value string) {
	if value != "" {
		req.Header.Set(name, value)
	}
}

// validCookieName reports whether b is an RFC 7230 token.
func validCookieName(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?={}`, c) >= 0 {
			return false
		}
	}
	return true
}

// validCookieValue reports whether b is an RFC 6265 cookie-value: cookie
// octets, optionally wrapped in double quotes.
func validCookieValue(b []byte) bool {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		b = b[1 : len(b)-1]
	}
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || c == '"' || c == ',' || c == ';' || c == '\\' {
			return false
		}
	}
	return true
}
