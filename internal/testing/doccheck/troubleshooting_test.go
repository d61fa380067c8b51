package doccheck

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

var (
	errorStatus = regexp.MustCompile(`\b[45][0-9]{2}\b`)
	quoted      = regexp.MustCompile(`"([^"]+)"|“([^”]+)”`)
)

// TestTroubleshootingQuotes: a troubleshooting row whose symptom is an
// error status quotes what the user or client sees with it, and each quote
// is text the code writes (a Go string or a page template, case aside), so
// a symptom can never name an answer no build gives.
func TestTroubleshootingQuotes(t *testing.T) {
	source := shippedText(t)
	rows := 0
	for name, text := range pages(t) {
		_, section, ok := strings.Cut(text, "\n## Troubleshooting\n")
		if !ok {
			continue
		}
		section, _, _ = strings.Cut(section, "\n## ")
		for line := range strings.SplitSeq(section, "\n") {
			if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "|---") {
				continue
			}
			symptom := strings.Split(line, "|")[1]
			if !errorStatus.MatchString(symptom) {
				continue
			}
			rows++
			quotes := quoted.FindAllStringSubmatch(symptom, -1)
			if len(quotes) == 0 {
				t.Errorf("%s: the symptom %q names an error status but quotes nothing the user sees", name, strings.TrimSpace(symptom))
			}
			for _, q := range quotes {
				if s := q[1] + q[2]; !strings.Contains(source, strings.ToLower(s)) {
					t.Errorf("%s: the symptom quotes %q, which no shipped code writes", name, s)
				}
			}
		}
	}
	if rows == 0 {
		t.Fatal("no troubleshooting row with an error status: is the reading broken?")
	}
}

// shippedText is the lower-cased text of the main module's Go files (tests
// left out) and page templates.
func shippedText(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, path := range repoFiles(t, "tools", "testdata", "bin", "testing") {
		if strings.HasSuffix(path, "_test.go") || !strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, ".html") {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(strings.ToLower(string(data)))
	}
	return b.String()
}
