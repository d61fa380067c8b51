package doccheck

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sandgate/sandgate/internal/gobuild"
)

// helpCache holds each binary's --help output, built once per test run:
// the binaries' own settings lists are the source of truth for names,
// defaults and help texts, whichever package assembles them.
var helpCache struct {
	sync.Mutex
	text map[string]string
}

// helpText returns `<bin> --help` for a binary under cmd/.
func helpText(t *testing.T, bin string) string {
	t.Helper()
	helpCache.Lock()
	defer helpCache.Unlock()
	if out, ok := helpCache.text[bin]; ok {
		return out
	}
	dir, err := os.MkdirTemp("", "doccheck-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	build := gobuild.Command(t.Context(), root, dir, "./cmd/"+bin)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/%s: %v\n%s", bin, err, out)
	}
	out, err := exec.CommandContext(t.Context(), filepath.Join(dir, bin), "--help").Output()
	if err != nil {
		t.Fatalf("%s --help: %v", bin, err)
	}
	if helpCache.text == nil {
		helpCache.text = map[string]string{}
	}
	helpCache.text[bin] = string(out)
	return string(out)
}

// helpDefaults returns each environment name `<bin> --help` lists with its
// default ("" when none).
func helpDefaults(t *testing.T, bin string) map[string]string {
	t.Helper()
	defaults := map[string]string{}
	for env, s := range parseSettings(helpText(t, bin)) {
		defaults[env] = s.def
	}
	return defaults
}

// helpSetting is one entry of a --help listing.
type helpSetting struct{ def, help string }

// helpSettings returns the settings `<bin> --help` lists by environment
// name.
func helpSettings(t *testing.T, bin string) map[string]helpSetting {
	t.Helper()
	return parseSettings(helpText(t, bin))
}

var (
	helpFlag    = regexp.MustCompile(`^\s+--[a-z0-9-]+ \[([A-Z][A-Z0-9_]*)\]`)
	helpDefault = regexp.MustCompile(`\(default ([^()]*)\)$`)
)

// parseSettings reads the settings package's --help layout: a "--flag [ENV]"
// line, then the help text, which ends in "(default X)" when there is one.
func parseSettings(help string) map[string]helpSetting {
	settings := map[string]helpSetting{}
	env := ""
	for _, line := range strings.Split(help, "\n") {
		if m := helpFlag.FindStringSubmatch(line); m != nil {
			env = m[1]
			settings[env] = helpSetting{}
			continue
		}
		if env == "" || !strings.HasPrefix(line, "        ") {
			env = ""
			continue
		}
		s := settings[env]
		s.help += strings.TrimSpace(line)
		if m := helpDefault.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			s.def = m[1]
		}
		settings[env] = s
	}
	return settings
}

// The pages that hold the make targets and the settings of make test, and
// the alert table.
const (
	developmentPage = "docs/development.md"
	operationsPage  = "docs/operations.md"
)

// pages are the documents checked: the README and every page of docs/.
func pages(t *testing.T) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range append(paths, filepath.Join(root, "README.md")) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = string(data)
	}
	return out
}

// repoFiles returns the paths of the repository's files, leaving out .git
// and every directory named in skip, at any depth.
func repoFiles(t *testing.T, skip ...string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == ".git" || slices.Contains(skip, d.Name())):
			return filepath.SkipDir
		case !d.IsDir():
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
