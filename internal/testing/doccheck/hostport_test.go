package doccheck

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	hostPortDecl  = regexp.MustCompile(`\bhostPort: (\d+)`)
	hostPortWord  = regexp.MustCompile(`(?i)\bhostport\b`)
	hostPortNamed = regexp.MustCompile("(?i)hostport`?:? `?(\\d{2,5})\\b")
	colonPort     = regexp.MustCompile(`[^\s:0-9]:(\d{2,5})\b`)
	// hostPortDenied marks a sentence that says something is not, or
	// would only later be, a hostPort.
	hostPortDenied = regexp.MustCompile(`(?i)\b(not a|no|without|would)\b`)
	sentenceEnd    = regexp.MustCompile(`\.\s+`)
)

// hostPortUnits splits a page into the units a hostPort claim is read in:
// each cell of a table row, else each sentence of a paragraph.
func hostPortUnits(text string) []string {
	var units []string
	for _, para := range paragraphs.Split(text, -1) {
		var prose []string
		for _, line := range strings.Split(para, "\n") {
			if strings.HasPrefix(line, "|") {
				units = append(units, tableCells(line)...)
			} else {
				prose = append(prose, line)
			}
		}
		units = append(units, sentenceEnd.Split(strings.Join(prose, " "), -1)...)
	}
	return units
}

// TestHostPortClaims: a sentence (or table cell) of a page that says
// hostPort, and does not deny it, names only ports some container of
// manifests/ declares as a hostPort, whether as "hostPort 8080" or as
// "<node IP>:8080".
func TestHostPortClaims(t *testing.T) {
	declared := map[string]bool{}
	for _, m := range hostPortDecl.FindAllStringSubmatch(readAll(t, filepath.Join(root, "manifests")), -1) {
		declared[m[1]] = true
	}
	if len(declared) == 0 {
		t.Fatal("no hostPort read from manifests/: is the pattern broken?")
	}
	checked := 0
	for page, text := range pages(t) {
		for _, unit := range hostPortUnits(text) {
			if !hostPortWord.MatchString(unit) || hostPortDenied.MatchString(unit) {
				continue
			}
			ports := append(hostPortNamed.FindAllStringSubmatch(unit, -1), colonPort.FindAllStringSubmatch(unit, -1)...)
			for _, m := range ports {
				checked++
				if !declared[m[1]] {
					t.Errorf("%s: %q claims a hostPort %s; manifests/ declare hostPorts only for %v", page, unit, m[1], declared)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no hostPort claim with a port found in the pages: is the pattern broken?")
	}
}
