package handshake

import (
	"errors"
	"fmt"
	"regexp"
)

// DefaultTokenPattern matches the agent app's launch line and nothing else:
//
//	dsh web: listening on http://<host>:<port>/?token=<token>
//
// The line must start with "dsh web: listening on " and an http(s) URL
// whose query carries a token parameter, first or after an '&'. The token
// is 16 to 512 URL-safe characters ([A-Za-z0-9._~-]) ended by '&', '#',
// white space or the end of the line; a longer run does not match at all.
// Anchored to the start of the launch line, it never matches the app's
// request log ("dsh web: GET /x&token=..."), whose paths a link can choose.
const DefaultTokenPattern = `^dsh web: listening on https?://[^\s?#]*\?(?:[^\s#]*&)?token=(?P<token>[A-Za-z0-9._~-]{16,512})(?:[&#\s]|$)`

// tokenGroup names the submatch of a token pattern that holds the token.
const tokenGroup = "token"

// maxTokenLen bounds what a custom pattern or a token file may yield, since
// the token goes into a request URI.
const maxTokenLen = 1024

// maxCandidates bounds the distinct tokens not refused before kept from
// one read of the logs. A container start prints one launch line; more are
// planted or repeated.
const maxCandidates = 16

// tokenMatcher finds launch-token candidates in log lines.
type tokenMatcher struct {
	re      *regexp.Regexp
	group   int // submatch index of the token
	streams [numStreams]bool
}

// compileTokenPattern compiles pattern and returns the index of its token
// group, which it must have.
func compileTokenPattern(pattern string) (*regexp.Regexp, int, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, 0, fmt.Errorf("compile token pattern: %w", err)
	}
	group := re.SubexpIndex(tokenGroup)
	if group < 0 {
		return nil, 0, errors.New("token pattern has no (?P<token>...) group")
	}
	return re, group, nil
}

// newTokenMatcher compiles pattern once; lines of other streams than
// streamName (StreamStdout, StreamStderr or StreamAny) are skipped.
func newTokenMatcher(pattern, streamName string) (*tokenMatcher, error) {
	re, group, err := compileTokenPattern(pattern)
	if err != nil {
		return nil, err
	}
	m := &tokenMatcher{re: re, group: group}
	switch streamName {
	case StreamStdout:
		m.streams[streamStdout] = true
	case StreamStderr:
		m.streams[streamStderr] = true
	case StreamAny:
		m.streams[streamStdout], m.streams[streamStderr] = true, true
	default:
		return nil, fmt.Errorf("token stream %q is not %s, %s or %s", streamName, StreamStdout, StreamStderr, StreamAny)
	}
	return m, nil
}

// candidates returns the launch tokens worth exchanging, in the order to
// try them, and how many distinct tokens it passed over because refused
// (which may be nil) reports the app refused them before.
//
// head is the start of the container start's log, oldest line first; tail
// its newest lines, newest first. The first launch line of head comes
// first: the app prints it when it starts, before anything an agent in the
// container can print, so lines planted after it never stand in its way.
// Then the matches of tail, newest first (within a line the last match
// first), for an app whose start is no longer on disk. Each distinct token
// counts once. Refused tokens are dropped before the cap of maxCandidates
// applies, so tokens refused before cannot crowd out one not yet tried;
// at most refusedCacheSize distinct tokens are looked at, more than the
// refused cache can hold for one pod. Unfinished lines (a token at their
// end may be cut short), lines of other streams, and matches that are
// empty, too long or hold spaces or control characters are skipped.
func (m *tokenMatcher) candidates(head, tail []logLine, refused func(tok string) bool) (toks []string, skipped int) {
	seen := make(map[string]struct{})
	// take considers one match and reports whether to look for more.
	take := func(tok []byte) bool {
		if _, ok := seen[string(tok)]; ok {
			return true
		}
		s := string(tok)
		seen[s] = struct{}{}
		if refused != nil && refused(s) {
			skipped++
		} else {
			toks = append(toks, s)
		}
		return len(toks) < maxCandidates && len(seen) < refusedCacheSize
	}
	if tok, ok := m.first(head); ok && !take(tok) {
		return toks, skipped
	}
	for _, l := range tail {
		matches := m.matches(l)
		for i := len(matches) - 1; i >= 0; i-- {
			if !take(matches[i]) {
				return toks, skipped
			}
		}
	}
	return toks, skipped
}

// first returns the first valid token of lines, oldest first.
func (m *tokenMatcher) first(lines []logLine) ([]byte, bool) {
	for _, l := range lines {
		if matches := m.matches(l); len(matches) > 0 {
			return matches[0], true
		}
	}
	return nil, false
}

// matches returns the valid tokens of one line in line order, none for an
// unfinished line or one of another stream.
func (m *tokenMatcher) matches(l logLine) [][]byte {
	if l.unfinished || !m.streams[l.stream] {
		return nil
	}
	var out [][]byte
	for _, loc := range m.re.FindAllSubmatchIndex(l.text, -1) {
		lo, hi := loc[2*m.group], loc[2*m.group+1]
		if lo >= 0 && validToken(l.text[lo:hi]) {
			out = append(out, l.text[lo:hi])
		}
	}
	return out
}

// validToken reports whether tok can be sent as a query parameter value
// after escaping and is plausible as a secret.
func validToken(tok []byte) bool {
	if len(tok) == 0 || len(tok) > maxTokenLen {
		return false
	}
	for _, c := range tok {
		if c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}
