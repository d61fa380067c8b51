package doccheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchQuotes: a table row of a page whose last cell names a results
// file of the bench (bench/RESULTS.md, bench/FLEET.md) quotes, in the cell
// before it, a figure that file still holds, so a new bench run that
// changes it fails here until the page follows.
func TestBenchQuotes(t *testing.T) {
	results := map[string]string{}
	for _, f := range []string{"bench/RESULTS.md", "bench/FLEET.md"} {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		results[f] = string(data)
	}
	checked := 0
	for name, text := range pages(t) {
		for line := range strings.SplitSeq(text, "\n") {
			if !strings.HasPrefix(line, "|") {
				continue
			}
			cells := tableCells(line)
			if len(cells) < 2 {
				continue
			}
			source, value := cells[len(cells)-1], cells[len(cells)-2]
			data, ok := results[source]
			if !ok {
				continue
			}
			checked++
			if !strings.Contains(data, value) {
				t.Errorf("%s quotes %q from %s, which no longer holds it: %s", name, value, source, line)
			}
		}
	}
	if checked == 0 {
		t.Error("no page quotes the bench: is the reading broken?")
	}
}
