package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// makefile returns the Makefile's targets, its `make help` listing, read
// the way its help target's awk reads it, and the defaults of the variables
// it lets the caller set (NAME ?= value).
func makefile(t *testing.T) (targets map[string]bool, help string, defaults map[string]string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	targets, defaults = map[string]bool{}, map[string]string{}
	var b strings.Builder
	settable := regexp.MustCompile(`^([A-Z][A-Z0-9_]*)\s*\?=\s*(.*)$`)
	rule := regexp.MustCompile(`^([A-Za-z0-9_.-]+(?: [A-Za-z0-9_.-]+)*):(?:[^=]|$)`)
	documented := regexp.MustCompile(`^([a-z0-9-]+):.*## (.*)$`)
	for _, line := range strings.Split(string(data), "\n") {
		if m := rule.FindStringSubmatch(line); m != nil {
			for _, name := range strings.Fields(m[1]) {
				targets[name] = true
			}
		}
		if m := documented.FindStringSubmatch(line); m != nil {
			fmt.Fprintf(&b, "  make %-17s %s\n", m[1], m[2])
		}
		if m := settable.FindStringSubmatch(line); m != nil {
			defaults[m[1]] = m[2]
		}
	}
	return targets, b.String(), defaults
}

var (
	inlineCode = regexp.MustCompile("`([^`\n]+)`")
	makeCall   = regexp.MustCompile(`(?:^|[\s;&|(])make ([a-z][a-z0-9-]*)`)
)

// TestMakeTargets: every `make <target>` a page shows as code (inline or in
// a fenced block) is a target of the Makefile, a default a page gives a
// Makefile variable ("`FUZZTIME` (default `10000x`)") is the Makefile's, and
// docs/development.md's list of targets is what `make help` prints.
func TestMakeTargets(t *testing.T) {
	targets, help, defaults := makefile(t)
	calls := 0
	for name, text := range pages(t) {
		var code []string
		for _, m := range inlineCode.FindAllStringSubmatch(text, -1) {
			code = append(code, m[1])
		}
		code = append(code, fencedBlocks(text)...)
		for _, m := range inlineValues.FindAllStringSubmatch(strings.Join(strings.Fields(text), " "), -1) {
			def, ok := defaults[m[1]]
			values, list := inlineList(m[2])
			if !ok || !list {
				continue
			}
			for _, v := range values {
				if !sameValue(v.value, def) {
					t.Errorf("%s: %s (%s), but the Makefile's default is %q", name, m[1], m[2], def)
				}
			}
		}
		for _, c := range code {
			for _, m := range makeCall.FindAllStringSubmatch(c, -1) {
				calls++
				if !targets[m[1]] {
					t.Errorf("%s shows `make %s`; the Makefile has no such target", name, m[1])
				}
			}
		}
	}
	if calls == 0 {
		t.Error("no `make <target>` found in the pages: is the pattern broken?")
	}

	dev := pages(t)[developmentPage]
	_, section, ok := strings.Cut(dev, "\n## Make targets\n")
	if !ok {
		t.Fatalf("%s has no \"## Make targets\" section", developmentPage)
	}
	blocks := fencedBlocks(section)
	if len(blocks) == 0 {
		t.Fatalf("%s's \"## Make targets\" has no fenced block", developmentPage)
	}
	if diff := firstDiff(blocks[0], help); diff != "" {
		t.Errorf("%s's list of make targets is not what `make help` prints (paste it again): %s", developmentPage, diff)
	}
}
