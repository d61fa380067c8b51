package nodeproxy

import (
	"bytes"

	"github.com/valyala/fasthttp"
)

// maxCredentialLen bounds a bearer token or session cookie value; our
// tokens are a few hundred bytes.
const maxCredentialLen = 4096

// maxSessionCookies bounds how many same-named session cookies are tried,
// e.g. a stale one left on another path next to the current one.
const maxSessionCookies = 4

// credentials is what a request presents, parsed from its headers.
type credentials struct {
	bearer  string   // from Authorization: Bearer
	cookies []string // session cookie values, in order
}

// readCredentials copies the bearer token and session cookie values out of
// h. An Authorization header of another scheme is ignored (and never
// forwarded).
func readCredentials(h *fasthttp.RequestHeader, cookieName string) credentials {
	var c credentials
	if tok, ok := parseBearer(h.Peek("Authorization")); ok {
		c.bearer = tok
	}
	for _, line := range h.PeekAll(fasthttp.HeaderCookie) {
		for len(line) > 0 && len(c.cookies) < maxSessionCookies {
			var pair []byte
			pair, line, _ = bytes.Cut(line, cookieSeparator)
			if v, ok := cookieValue(pair, cookieName); ok && validCookieValue(v) {
				c.cookies = append(c.cookies, string(v))
			}
		}
	}
	return c
}

var cookieSeparator = []byte(";")

// cookieValue is the value of one name=value pair of a Cookie header when
// its name is name, read as fasthttp's own cookie parser does (spaces
// around both trimmed, one pair of quotes around the value dropped), so
// that finding the session cookie parses none of the others.
func cookieValue(pair []byte, name string) ([]byte, bool) {
	k, v, ok := bytes.Cut(pair, []byte("="))
	if !ok || string(bytes.Trim(k, " \t")) != name {
		return nil, false
	}
	v = bytes.Trim(v, " \t")
	if len(v) > 1 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	return v, true
}

var bearerScheme = []byte("bearer")

// parseBearer returns the token of an RFC 6750 "Bearer <token68>" value.
func parseBearer(v []byte) (string, bool) {
	if len(v) < len(bearerScheme)+2 || !bytes.EqualFold(v[:len(bearerScheme)], bearerScheme) || v[len(bearerScheme)] != ' ' {
		return "", false
	}
	tok := bytes.TrimLeft(v[len(bearerScheme):], " ")
	if len(tok) == 0 || len(tok) > maxCredentialLen {
		return "", false
	}
	i := 0
	for i < len(tok) && isToken68(tok[i]) {
		i++
	}
	for i < len(tok) && tok[i] == '=' {
		i++
	}
	if i != len(tok) || tok[0] == '=' {
		return "", false
	}
	return string(tok), true
}

func isToken68(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/'
}

// validCookieValue accepts what a session token can be: non-empty,
// bounded, RFC 6265 cookie octets.
func validCookieValue(v []byte) bool {
	if len(v) == 0 || len(v) > maxCredentialLen {
		return false
	}
	for _, c := range v {
		if c <= ' ' || c >= 0x7f || c == '"' || c == ',' || c == ';' || c == '\\' {
			return false
		}
	}
	return true
}
