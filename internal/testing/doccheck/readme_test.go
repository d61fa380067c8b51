package doccheck

import (
	"strings"
	"testing"
)

// TestReadmeFirstScreen: the README stays a first screen, a map and links
// (the manuals live in docs/), and its first screen holds the two commands
// that set up and run everything.
func TestReadmeFirstScreen(t *testing.T) {
	lines := strings.Split(pages(t)["README.md"], "\n")
	if len(lines) >= 200 {
		t.Errorf("README.md has %d lines; keep it under 200 and move manuals to docs/", len(lines))
	}
	first := strings.Join(lines[:min(len(lines), 25)], "\n")
	for _, cmd := range []string{"\nmake demo ", "\nmake test "} {
		if !strings.Contains(first, cmd) {
			t.Errorf("README.md's first 25 lines do not show %q", strings.TrimSpace(cmd))
		}
	}
}
