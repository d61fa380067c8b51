package handshake

import (
	"regexp"
	"strings"
	"testing"
)

// defaultMatcher returns a matcher for DefaultTokenPattern.
func defaultMatcher(t testing.TB) *tokenMatcher {
	t.Helper()
	m, err := newTokenMatcher(DefaultTokenPattern)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var (
	tokA = testToken("a")
	tokB = testToken("b")
)

// tokenCases drive TestExtractToken and seed FuzzExtractToken. lines are
// newest first, as the reader returns them.
var tokenCases = []struct {
	name  string
	lines []string
	want  string // "" means no token
}{
	{"launch line", []string{launchLine(tokA)}, tokA},
	{"with prefix and suffix", []string{"[info] 12:00 " + launchLine(tokA) + " (press ctrl-c)"}, tokA},
	{"ampersand param", []string{"dsh web: open http://h:1/?x=1&token=" + tokA + "&y=2"}, tokA},
	{"newest line wins", []string{launchLine(tokB), "noise", launchLine(tokA)}, tokB},
	{"last match in line wins", []string{"dsh web: ?token=" + tokA + " dsh web: ?token=" + tokB}, tokB},
	{"token at end of line", []string{"dsh web: ?token=" + tokA}, tokA},
	{"token followed by quote", []string{"dsh web: \"http://h/?token=" + tokA + "\""}, tokA},
	{"no marker", []string{"listening on http://0.0.0.0:3080/?token=" + tokA}, ""},
	{"marker after token", []string{"?token=" + tokA + " dsh web:"}, ""},
	{"token too short", []string{"dsh web: ?token=" + tokA[:42]}, ""},
	{"token too long", []string{"dsh web: ?token=" + tokA + "x"}, ""},
	{"invalid char", []string{"dsh web: ?token=" + tokA[:20] + "+" + tokA[21:]}, ""},
	{"other param name", []string{"dsh web: ?xtoken=" + tokA}, ""},
	{"no token param", []string{"dsh web: listening on http://0.0.0.0:3080/"}, ""},
	{"empty", nil, ""},
	{"falls back to older line", []string{"dsh web: ?token=short", launchLine(tokA)}, tokA},
}

func TestExtractToken(t *testing.T) {
	m := defaultMatcher(t)
	for _, tc := range tokenCases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := m.find(toLines(tc.lines))
			if ok != (tc.want != "") || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}

func TestCustomTokenPattern(t *testing.T) {
	tests := []struct {
		pattern string
		line    string
		want    string
		bad     bool
	}{
		{`launch token: (\S+)`, "launch token: s3cr3t", "s3cr3t", false},
		{`(a)|token=(?P<token>\w+)`, "token=xyz", "xyz", false},
		{`token=(.*)`, "token=has space", "", false}, // spaces are refused
		{`token=\w+`, "", "", true},                  // no group
		{`token=(`, "", "", true},                    // does not compile
	}
	for _, tc := range tests {
		m, err := newTokenMatcher(tc.pattern)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: accepted", tc.pattern)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.pattern, err)
		}
		if got, _ := m.find(toLines([]string{tc.line})); got != tc.want {
			t.Errorf("%q on %q: got %q, want %q", tc.pattern, tc.line, got, tc.want)
		}
	}
}

func toLines(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

var base64URL43 = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

func FuzzExtractToken(f *testing.F) {
	for _, tc := range tokenCases {
		f.Add(strings.Join(tc.lines, "\n"))
	}
	m := defaultMatcher(f)
	f.Fuzz(func(t *testing.T, text string) {
		lines := toLines(strings.Split(text, "\n"))
		tok, ok := m.find(lines)
		if !ok {
			if tok != "" {
				t.Fatalf("token %q without a match", tok)
			}
			return
		}
		if !base64URL43.MatchString(tok) {
			t.Fatalf("token %q is not 43 base64url characters", tok)
		}
		// The token stands in a line after "dsh web:" and a token= param.
		found := false
		for _, l := range lines {
			s := string(l)
			marker := strings.Index(s, "dsh web:")
			if marker >= 0 && (strings.Contains(s[marker:], "?token="+tok) || strings.Contains(s[marker:], "&token="+tok)) {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("token %q not found after the marker in %q", tok, text)
		}
	})
}
