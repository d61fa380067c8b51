package handshake

import (
	"fmt"
	"regexp"
)

// DefaultTokenPattern matches the agent app's launch line,
//
//	dsh web: listening on http://<host>:<port>/?token=<token>
//
// tolerating other text around it as long as "dsh web:" comes before a
// ?token= or &token= query parameter. The token is 43 characters of
// base64url (32 random bytes, unpadded) and must not run on into more
// base64url characters.
const DefaultTokenPattern = `dsh web:.*[?&]token=(?P<token>[A-Za-z0-9_-]{43})(?:[^A-Za-z0-9_-]|$)`

// maxTokenLen bounds what a custom pattern may extract, since the token goes
// into a request URI.
const maxTokenLen = 1024

// tokenMatcher finds the launch token in log lines.
type tokenMatcher struct {
	re    *regexp.Regexp
	group int // submatch index of the token
}

// newTokenMatcher compiles pattern once. The token is the group named
// "token", or the first group when none is named so.
func newTokenMatcher(pattern string) (*tokenMatcher, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("compile token pattern: %w", err)
	}
	group := re.SubexpIndex("token")
	if group < 0 {
		if re.NumSubexp() < 1 {
			return nil, fmt.Errorf("token pattern has no capturing group")
		}
		group = 1
	}
	return &tokenMatcher{re: re, group: group}, nil
}

// find returns the newest token in lines, which are newest first. Within a
// line the last match wins. Matches that are empty, too long or contain
// control characters or spaces are skipped.
func (m *tokenMatcher) find(lines [][]byte) (string, bool) {
	for _, line := range lines {
		matches := m.re.FindAllSubmatchIndex(line, -1)
		for i := len(matches) - 1; i >= 0; i-- {
			lo, hi := matches[i][2*m.group], matches[i][2*m.group+1]
			if lo < 0 {
				continue
			}
			if tok := line[lo:hi]; validToken(tok) {
				return string(tok), true
			}
		}
	}
	return "", false
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
