package nodeproxy

import (
	"bufio"
	"slices"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

type credCase struct {
	name          string
	authorization string
	cookie        string
	bearer        string
	cookies       []string
}

func credCases() []credCase {
	long := strings.Repeat("a", maxCredentialLen+1)
	return []credCase{
		{name: "none"},
		{name: "bearer", authorization: "Bearer abc.def-ghi_jkl~", bearer: "abc.def-ghi_jkl~"},
		{name: "bearer any case", authorization: "bEaReR tok==", bearer: "tok=="},
		{name: "bearer extra spaces", authorization: "Bearer    tok", bearer: "tok"},
		{name: "basic ignored", authorization: "Basic YTpi"},
		{name: "bearer empty", authorization: "Bearer "},
		{name: "bearer no space", authorization: "Bearertok"},
		{name: "bearer bad char", authorization: "Bearer tok en"},
		{name: "bearer padding first", authorization: "Bearer =abc"},
		{name: "bearer padding inside", authorization: "Bearer a=b"},
		{name: "bearer too long", authorization: "Bearer " + long},
		{name: "session cookie", cookie: "dsh_gw_session=a.b.c", cookies: []string{"a.b.c"}},
		{name: "among others", cookie: "x=1; dsh_gw_session=a.b.c; y=2", cookies: []string{"a.b.c"}},
		{name: "two session cookies", cookie: "dsh_gw_session=old; dsh_gw_session=new", cookies: []string{"old", "new"}},
		{name: "capped", cookie: strings.Repeat("dsh_gw_session=t; ", 6), cookies: []string{"t", "t", "t", "t"}},
		{name: "other name only", cookie: "dsh_gw_sessionX=a; __Host-dsh_gw_session=b"},
		{name: "empty value", cookie: "dsh_gw_session="},
		{name: "quoted value unwrapped", cookie: `dsh_gw_session="a"`, cookies: []string{"a"}},
		{name: "too long", cookie: "dsh_gw_session=" + long},
		{name: "both", authorization: "Bearer t", cookie: "dsh_gw_session=c", bearer: "t", cookies: []string{"c"}},
	}
}

func TestReadCredentials(t *testing.T) {
	for _, tc := range credCases() {
		t.Run(tc.name, func(t *testing.T) {
			var h fasthttp.RequestHeader
			if tc.authorization != "" {
				h.Set("Authorization", tc.authorization)
			}
			if tc.cookie != "" {
				h.Set("Cookie", tc.cookie)
			}
			c := readCredentials(&h, DefaultCookieName)
			if c.bearer != tc.bearer || !slices.Equal(c.cookies, tc.cookies) {
				t.Errorf("readCredentials = %q %q, want %q %q", c.bearer, c.cookies, tc.bearer, tc.cookies)
			}
		})
	}
}

// FuzzCredentials feeds arbitrary Authorization and Cookie headers: parsing
// never panics and yields only well-formed, bounded credentials.
func FuzzCredentials(f *testing.F) {
	for _, tc := range credCases() {
		f.Add(tc.authorization, tc.cookie)
	}
	f.Fuzz(func(t *testing.T, authorization, cookieHeader string) {
		var h fasthttp.RequestHeader
		h.Set("Authorization", authorization)
		h.Set("Cookie", cookieHeader)
		// fasthttp folds line breaks in a header value to spaces, as HTTP/1.1
		// asks of a recipient that accepts obs-fold: judge what the header holds.
		stored, storedCookies := string(h.Peek("Authorization")), string(h.Peek("Cookie"))
		c := readCredentials(&h, DefaultCookieName)
		if c.bearer != "" {
			if len(c.bearer) > maxCredentialLen || !strings.HasPrefix(strings.ToLower(stored), "bearer ") {
				t.Fatalf("bearer %q from %q (sent %q)", c.bearer, stored, authorization)
			}
			for i := 0; i < len(c.bearer); i++ {
				if ch := c.bearer[i]; !isToken68(ch) && ch != '=' {
					t.Fatalf("bearer %q has byte %q", c.bearer, ch)
				}
			}
		}
		if len(c.cookies) > maxSessionCookies {
			t.Fatalf("%d session cookies", len(c.cookies))
		}
		for _, v := range c.cookies {
			if !validCookieValue([]byte(v)) || !strings.Contains(storedCookies, v) {
				t.Fatalf("cookie value %q from %q (sent %q)", v, storedCookies, cookieHeader)
			}
		}
	})
}

// FuzzSessionCookie: the session cookie values readCredentials finds in a
// request as the server reads it, without parsing the other cookies, are
// the ones fasthttp's cookie parser finds, valid and at most
// maxSessionCookies of them.
func FuzzSessionCookie(f *testing.F) {
	f.Add("a=1; " + DefaultCookieName + "=tok; b=2")
	f.Add(DefaultCookieName + ` = "tok" ;` + DefaultCookieName + "=two")
	f.Add(" ; =; " + DefaultCookieName + "; " + DefaultCookieName + "=\t\tx\t")
	f.Fuzz(func(t *testing.T, cookieHeader string) {
		var req fasthttp.Request
		raw := "GET / HTTP/1.1\r\nHost: h\r\nCookie: " + cookieHeader + "\r\nCookie: " + DefaultCookieName + "=last\r\n\r\n"
		if req.Read(bufio.NewReader(strings.NewReader(raw))) != nil {
			return
		}
		var parsed fasthttp.RequestHeader
		req.Header.CopyTo(&parsed)
		var want []string
		for k, v := range parsed.Cookies() {
			if string(k) == DefaultCookieName && validCookieValue(v) && len(want) < maxSessionCookies {
				want = append(want, string(v))
			}
		}
		if got := readCredentials(&req.Header, DefaultCookieName).cookies; !slices.Equal(got, want) {
			t.Fatalf("session cookies %q, fasthttp's parser finds %q", got, want)
		}
	})
}
