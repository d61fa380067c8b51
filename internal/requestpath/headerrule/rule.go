package headerrule

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/valyala/fasthttp"
)

// HopByHop are the RFC 9110 connection-specific headers, lower case. No
// direction passes them.
var HopByHop = []string{
	"connection", "keep-alive", "proxy-authenticate", "proxy-authorization",
	"proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
}

// Spec is one direction's rule as data. Names are case-insensitive.
type Spec struct {
	// Drop names headers that never pass; DropPrefixes start such names.
	Drop, DropPrefixes []string
	// Allow, when not empty, makes the rule an allowlist: only the names
	// it or AllowPrefixes list pass, beside Always. With both empty,
	// every name not dropped passes.
	Allow, AllowPrefixes []string
	// Always pass unless dropped, allowlist or not (a body's framing).
	Always []string
}

// Rule is a compiled Spec.
type Rule struct {
	drop, allow, always         map[string]struct{}
	dropPrefixes, allowPrefixes []string
	allowAll                    bool
}

// New compiles s.
func New(s Spec) *Rule {
	return &Rule{
		drop: set(s.Drop), allow: set(s.Allow), always: set(s.Always),
		dropPrefixes: lowered(s.DropPrefixes), allowPrefixes: lowered(s.AllowPrefixes),
		allowAll: len(s.Allow) == 0 && len(s.AllowPrefixes) == 0,
	}
}

// Passes reports whether a header of the lower-case name passes, apart
// from the names a Connection header lists (which the copies drop too).
// Map lookups index with string(name) directly, which does not allocate.
func (r *Rule) Passes(name []byte) bool {
	if _, ok := r.drop[string(name)]; ok || hasPrefix(name, r.dropPrefixes) {
		return false
	}
	if r.allowAll {
		return true
	}
	if _, ok := r.always[string(name)]; ok {
		return true
	}
	_, ok := r.allow[string(name)]
	return ok || hasPrefix(name, r.allowPrefixes)
}

// Edit sees each response header that passes, by its name as the
// upstream sent it (compare it case-insensitively), and returns the value
// to send, or false to leave the header out (to write it later, or never).
type Edit func(name, value []byte) ([]byte, bool)

// CopyRequest adds the headers of src that pass onto dst.
func (r *Rule) CopyRequest(dst, src *fasthttp.RequestHeader) {
	conn := tokens(src.Peek("Connection"))
	var buf [maxName]byte
	for k, v := range src.All() {
		if name := lower(&buf, k); r.Passes(name) && !listed(conn, name) {
			dst.AddBytesKV(k, v)
		}
	}
}

// DialHeader is the headers of src that pass, for a WebSocket dial.
func (r *Rule) DialHeader(src *fasthttp.RequestHeader) http.Header {
	conn := tokens(src.Peek("Connection"))
	h := make(http.Header)
	var buf [maxName]byte
	for k, v := range src.All() {
		if name := lower(&buf, k); r.Passes(name) && !listed(conn, name) {
			h.Add(string(k), string(v))
		}
	}
	return h
}

// CopyResponse adds the headers of src that pass onto dst, in one pass,
// through edit when it is not nil. The status is not a header: the
// caller copies it.
func (r *Rule) CopyResponse(dst, src *fasthttp.ResponseHeader, edit Edit) {
	conn := tokens(src.Peek("Connection"))
	var buf [maxName]byte
	for k, v := range src.All() {
		name := lower(&buf, k)
		if !r.Passes(name) || listed(conn, name) {
			continue
		}
		if edit != nil {
			var keep bool
			if v, keep = edit(k, v); !keep {
				continue
			}
		}
		dst.AddBytesKV(k, v)
	}
}

// maxName bounds the names lower-cased on the stack; longer ones are
// lower-cased on the heap.
const maxName = 64

// lower returns b lower-cased in buf (ASCII only).
func lower(buf *[maxName]byte, b []byte) []byte {
	if len(b) > len(buf) {
		return bytes.ToLower(b)
	}
	out := buf[:len(b)]
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// tokens lists the lower-case names a Connection header value holds.
func tokens(v []byte) [][]byte {
	if len(v) == 0 {
		return nil
	}
	var out [][]byte
	for tok := range bytes.SplitSeq(v, []byte(",")) {
		if tok = bytes.TrimSpace(tok); len(tok) > 0 {
			out = append(out, bytes.ToLower(tok))
		}
	}
	return out
}

func listed(names [][]byte, name []byte) bool {
	for _, n := range names {
		if bytes.Equal(n, name) {
			return true
		}
	}
	return false
}

func hasPrefix(name []byte, prefixes []string) bool {
	for _, p := range prefixes {
		if len(name) >= len(p) && string(name[:len(p)]) == p {
			return true
		}
	}
	return false
}

func set(names []string) map[string]struct{} {
	m := make(map[string]struct{}, len(names))
	for _, n := range names {
		m[strings.ToLower(strings.TrimSpace(n))] = struct{}{}
	}
	return m
}

func lowered(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strings.ToLower(n)
	}
	return out
}

// Pair is one direction's rule for an HTTP request and for a WebSocket
// dial, which leaves out the handshake headers the dialer sets itself.
type Pair struct{ HTTP, Dial *Rule }

// NewPair compiles s, and s with dialerSets dropped too.
func NewPair(s Spec, dialerSets []string) Pair {
	d := s
	d.Drop = append(append([]string(nil), s.Drop...), dialerSets...)
	return Pair{HTTP: New(s), Dial: New(d)}
}
