package handshake

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// defaultMatcher returns a matcher for DefaultTokenPattern on stdout.
func defaultMatcher(t testing.TB) *tokenMatcher {
	t.Helper()
	m, err := newTokenMatcher(DefaultTokenPattern, StreamStdout)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var (
	tokA = testToken("a")
	tokB = testToken("b")
	// Shapes other apps print: 16 random bytes in hex, 16 in base64url,
	// and a long opaque token.
	tokHex32  = "9f86d081884c7d659a2feaa0c55ad015"
	tokB64_22 = "n4bQgYhMfWWaL-qgxVrQFQ"
	tok200    = strings.Repeat("Ab9._~-xYz", 20)
)

// tokenCases drive TestTokenCandidates and seed FuzzTokenCandidates.
// lines are stdout lines, newest first, as the reader returns them.
var tokenCases = []struct {
	name  string
	lines []string
	want  []string
}{
	{"launch line", []string{launchLine(tokA)}, []string{tokA}},
	{"32 hex characters", []string{launchLine(tokHex32)}, []string{tokHex32}},
	{"22 base64url characters", []string{launchLine(tokB64_22)}, []string{tokB64_22}},
	{"200 characters", []string{launchLine(tok200)}, []string{tok200}},
	{"16 characters", []string{launchLine(tokA[:16])}, []string{tokA[:16]}},
	{"512 characters", []string{launchLine(strings.Repeat("x", 512))}, []string{strings.Repeat("x", 512)}},
	{"15 characters is too short", []string{launchLine(tokA[:15])}, nil},
	{"513 characters is too long", []string{launchLine(strings.Repeat("x", 513))}, nil},
	{"https", []string{"dsh web: listening on https://h.example/?token=" + tokA}, []string{tokA}},
	{"after another parameter", []string{"dsh web: listening on http://h:1/?x=1&token=" + tokA + "&y=2"}, []string{tokA}},
	{"before a fragment", []string{"dsh web: listening on http://h:1/?token=" + tokA + "#x"}, []string{tokA}},
	{"text after a space", []string{launchLine(tokA) + " (press ctrl-c)"}, []string{tokA}},
	{"carriage return", []string{launchLine(tokA) + "\r"}, []string{tokA}},
	{"newest line first", []string{launchLine(tokB), "noise", launchLine(tokA)}, []string{tokB, tokA}},
	{"repeated launch line counts once", []string{launchLine(tokA), "noise", launchLine(tokA)}, []string{tokA}},
	{"request log with &token=", []string{"dsh web: GET /x&token=" + tokB + " 401 0ms"}, nil},
	{"request log with ?token=", []string{"dsh web: GET /?token=" + tokB + " 303 1ms"}, nil},
	{"request log of a launch line as path", []string{"dsh web: GET /dsh%20web:%20listening%20on%20http://h/?token=" + tokB + " 401 0ms"}, nil},
	{"request log newer than the launch line", []string{"dsh web: GET /u/x&token=" + tokB + " 401 0ms", launchLine(tokA)}, []string{tokA}},
	{"text before the launch line", []string{"[info] " + launchLine(tokA)}, nil},
	{"launch line quoted by other output", []string{`agent: said "` + launchLine(tokB) + `"`}, nil},
	{"no marker", []string{"listening on http://0.0.0.0:3080/?token=" + tokA}, nil},
	{"other parameter name", []string{"dsh web: listening on http://h/?xtoken=" + tokA}, nil},
	{"token in the path", []string{"dsh web: listening on http://h/token=" + tokA}, nil},
	{"character outside the set", []string{launchLine(tokA[:20] + "+" + tokA[21:])}, nil},
	{"no token parameter", []string{"dsh web: listening on http://0.0.0.0:3080/"}, nil},
	{"empty", nil, nil},
}

func TestTokenCandidates(t *testing.T) {
	m := defaultMatcher(t)
	for _, tc := range tokenCases {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := m.candidates(nil, stdoutLines(tc.lines...), nil); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTokenStreams(t *testing.T) {
	lines := []logLine{
		{stream: streamStdout, text: []byte(launchLine(tokHex32)), unfinished: true},
		{stream: streamStderr, text: []byte(launchLine(tokB))},
		{stream: streamStdout, text: []byte(launchLine(tokA))},
	}
	tests := []struct {
		stream string
		want   []string
	}{
		{StreamStdout, []string{tokA}},
		{StreamStderr, []string{tokB}},
		{StreamAny, []string{tokB, tokA}},
	}
	for _, tc := range tests {
		t.Run(tc.stream, func(t *testing.T) {
			m, err := newTokenMatcher(DefaultTokenPattern, tc.stream)
			if err != nil {
				t.Fatal(err)
			}
			// The unfinished line is skipped on every stream: its
			// token may still be growing.
			if got, _ := m.candidates(nil, lines, nil); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := newTokenMatcher(DefaultTokenPattern, "stdin"); err == nil {
		t.Error("stream stdin accepted")
	}
}

func TestCustomTokenPattern(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		line    string
		want    []string
		bad     string // part of the error for a refused pattern
	}{
		{"other launch line", `^launch token: (?P<token>\S+)$`, "launch token: s3cr3t", []string{"s3cr3t"}, ""},
		{"token group not first", `(a)|token=(?P<token>\w+)`, "token=xyz", []string{"xyz"}, ""},
		{"match with a space is skipped", `token=(?P<token>.*)`, "token=has space", nil, ""},
		{"unnamed group", `token=(\S+)`, "", nil, "(?P<token>...)"},
		{"no group", `token=\w+`, "", nil, "(?P<token>...)"},
		{"does not compile", `token=(`, "", nil, "compile token pattern"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := newTokenMatcher(tc.pattern, StreamStdout)
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("error %v, want %q", err, tc.bad)
				}
				if (Options{TokenPattern: tc.pattern}).Validate() == nil {
					t.Error("Validate accepted the pattern")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := m.candidates(nil, stdoutLines(tc.line), nil); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCandidatesBounded: planted launch lines cannot grow a handshake's
// work without bound, and the bound counts only tokens not refused before,
// so refused ones never crowd out the rest.
func TestCandidatesBounded(t *testing.T) {
	var lines []string
	for i := range 3 * maxCandidates {
		lines = append(lines, launchLine(testToken(strings.Repeat("p", i+1))))
	}
	m := defaultMatcher(t)
	if got, _ := m.candidates(nil, stdoutLines(lines...), nil); len(got) != maxCandidates {
		t.Errorf("%d candidates, want %d", len(got), maxCandidates)
	}
	refused := func(tok string) bool {
		return slices.ContainsFunc(lines[:2*maxCandidates], func(l string) bool { return strings.HasSuffix(l, tok) })
	}
	got, skipped := m.candidates(nil, stdoutLines(lines...), refused)
	if want := lines[2*maxCandidates:]; len(got) != maxCandidates || !strings.HasSuffix(want[0], got[0]) || skipped != 2*maxCandidates {
		t.Errorf("got %d candidates starting %q, %d skipped; want the %d not refused and %d skipped", len(got), got[0], skipped, maxCandidates, 2*maxCandidates)
	}
}

// TestStartLaunchLineFirst: the first launch line of the container start
// is tried before the newest ones, once, unless refused before.
func TestStartLaunchLineFirst(t *testing.T) {
	m := defaultMatcher(t)
	head := stdoutLines("booting", launchLine(tokA), "ready", launchLine(tokB))
	tail := stdoutLines(launchLine(tokHex32), launchLine(tokB), "ready", launchLine(tokA))
	tests := []struct {
		name    string
		head    []logLine
		refused []string
		want    []string
		skipped int
	}{
		{"start first, then newest", head, nil, []string{tokA, tokHex32, tokB}, 0},
		{"no head", nil, nil, []string{tokHex32, tokB, tokA}, 0},
		{"head without a launch line", stdoutLines("booting", "ready"), nil, []string{tokHex32, tokB, tokA}, 0},
		{"start refused before", head, []string{tokA}, []string{tokHex32, tokB}, 1},
		{"unfinished start line", []logLine{{stream: streamStdout, text: []byte(launchLine(tokB)), unfinished: true}}, nil, []string{tokHex32, tokB, tokA}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, skipped := m.candidates(tc.head, tail, func(tok string) bool { return slices.Contains(tc.refused, tok) })
			if !slices.Equal(got, tc.want) || skipped != tc.skipped {
				t.Errorf("got %q, %d skipped; want %q, %d", got, skipped, tc.want, tc.skipped)
			}
		})
	}
}

// stdoutLines makes finished stdout lines of ss.
func stdoutLines(ss ...string) []logLine {
	out := make([]logLine, len(ss))
	for i, s := range ss {
		out[i] = logLine{stream: streamStdout, text: []byte(s)}
	}
	return out
}

var defaultTokenShape = regexp.MustCompile(`^[A-Za-z0-9._~-]{16,512}$`)

// FuzzTokenCandidates checks the default matcher on any lines: a candidate
// is a plausible token that stands in the token parameter of a finished
// stdout line starting with the launch-line prefix, never anywhere else.
// stderr marks which lines (by bit) come from stderr.
func FuzzTokenCandidates(f *testing.F) {
	for _, tc := range tokenCases {
		f.Add(strings.Join(tc.lines, "\n"), uint64(0))
		f.Add(strings.Join(tc.lines, "\n"), uint64(1))
	}
	m := defaultMatcher(f)
	custom, err := newTokenMatcher(`token[:=](?P<token>\S*)`, StreamAny)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string, stderr uint64) {
		var lines []logLine
		for i, s := range strings.Split(text, "\n") {
			l := logLine{stream: streamStdout, text: []byte(s)}
			if i < 64 && stderr&(1<<i) != 0 {
				l.stream = streamStderr
			}
			lines = append(lines, l)
		}
		got, _ := m.candidates(nil, lines, nil)
		if len(got) > maxCandidates {
			t.Fatalf("%d candidates", len(got))
		}
		for i, tok := range got {
			if !defaultTokenShape.MatchString(tok) {
				t.Fatalf("candidate %q does not have the token shape", tok)
			}
			if slices.Contains(got[:i], tok) {
				t.Fatalf("candidate %q twice", tok)
			}
			if !slices.ContainsFunc(lines, func(l logLine) bool { return onLaunchLine(l, tok) }) {
				t.Fatalf("candidate %q is on no stdout launch line of %q", tok, text)
			}
		}
		// The same lines as a container start's head: its first launch
		// token leads, and refused tokens are left out and counted, not
		// capped.
		head := slices.Clone(lines)
		slices.Reverse(head)
		refused := func(tok string) bool { return len(tok)%2 == 0 }
		withHead, skipped := m.candidates(head, lines, refused)
		if first, ok := m.first(head); ok && !refused(string(first)) && (len(withHead) == 0 || withHead[0] != string(first)) {
			t.Fatalf("candidates %q do not start with the start's token %q", withHead, first)
		}
		fresh := slices.DeleteFunc(slices.Clone(got), refused)
		if len(withHead) > maxCandidates || len(withHead) < len(fresh) || slices.ContainsFunc(withHead, refused) {
			t.Fatalf("candidates %q with the head, %q without, %d skipped", withHead, got, skipped)
		}
		customGot, _ := custom.candidates(head, lines, nil)
		for _, tok := range customGot {
			if !validToken([]byte(tok)) {
				t.Fatalf("custom pattern candidate %q is not a valid token", tok)
			}
		}
	})
}

// onLaunchLine reports whether tok is the value of a token parameter in l,
// a stdout launch line.
func onLaunchLine(l logLine, tok string) bool {
	s := string(l.text)
	if l.stream != streamStdout || !strings.HasPrefix(s, "dsh web: listening on http") {
		return false
	}
	for _, p := range []string{"?token=", "&token="} {
		if i := strings.Index(s, p+tok); i >= 0 {
			end := i + len(p) + len(tok)
			if end == len(s) || strings.IndexByte("&# \t\r\n\v\f", s[end]) >= 0 {
				return true
			}
		}
	}
	return false
}
