package doccheck

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var fence = regexp.MustCompile("(?ms)^```[a-z]*\n(.*?)^```")

// fencedBlocks returns the code blocks of a Markdown page.
func fencedBlocks(page string) []string {
	var blocks []string
	for _, m := range fence.FindAllStringSubmatch(page, -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// TestHelpBlocks: a page that quotes a binary's --help quotes it whole and
// as the binary prints it, and each server's --help is quoted somewhere, so
// every setting is documented with its default.
func TestHelpBlocks(t *testing.T) {
	quoted := map[string]bool{}
	for name, page := range pages(t) {
		for _, block := range fencedBlocks(page) {
			bin, ok := strings.CutPrefix(block, "Usage: ")
			if !ok {
				continue
			}
			bin, _, _ = strings.Cut(bin, " ")
			if !slices.Contains(slices.Collect(maps.Values(binaries)), bin) {
				continue
			}
			quoted[bin] = true
			if diff := firstDiff(block, helpText(t, bin)); diff != "" {
				t.Errorf("%s quotes `%s --help`, which now prints otherwise (paste it again): %s", name, bin, diff)
			}
		}
	}
	for _, bin := range binaries {
		if !quoted[bin] {
			t.Errorf("no page quotes `%s --help` in a fenced block starting with \"Usage: %s\"", bin, bin)
		}
	}
}

// firstDiff describes the first line where doc and want differ, or returns
// "" when they are the same text.
func firstDiff(doc, want string) string {
	d := strings.Split(strings.TrimRight(doc, "\n"), "\n")
	w := strings.Split(strings.TrimRight(want, "\n"), "\n")
	for i := range max(len(d), len(w)) {
		var dl, wl string
		if i < len(d) {
			dl = d[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if dl != wl {
			return fmt.Sprintf("line %d: the page has %q, want %q", i+1, dl, wl)
		}
	}
	return ""
}
