package handshake

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
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

// maxCandidates bounds the distinct tokens kept from one read of the logs.
// A container start prints one launch line; more are planted or repeated.
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

// candidates returns the distinct tokens of the matching lines, newest
// first, given lines newest first; within a line the last match comes
// first. Unfinished lines (a token at their end may be cut short), lines
// of other streams, and matches that are empty, too long or hold spaces or
// control characters are skipped.
func (m *tokenMatcher) candidates(lines []logLine) []string {
	var out []string
	for _, l := range lines {
		if l.unfinished || !m.streams[l.stream] {
			continue
		}
		matches := m.re.FindAllSubmatchIndex(l.text, -1)
		for i := len(matches) - 1; i >= 0; i-- {
			lo, hi := matches[i][2*m.group], matches[i][2*m.group+1]
			if lo < 0 {
				continue
			}
			tok := l.text[lo:hi]
			if !validToken(tok) || slices.Contains(out, string(tok)) {
				continue
			}
			out = append(out, string(tok))
			if len(out) == maxCandidates {
				return out
			}
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
