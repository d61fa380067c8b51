package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	// repoPath is a code span naming a file or directory of the repository
	// (generated ones, bin/ and artifacts/, are left out).
	repoPath = regexp.MustCompile("`((?:\\./)?(?:cmd|internal|manifests|docs|examples|charts|tools|bench|\\.ci)/[^`\\s]*|[A-Za-z][A-Za-z0-9_.-]*\\.(?:md|env)|Makefile)`")
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	testName = regexp.MustCompile(`\b(?:Test|Fuzz|Benchmark)[A-Z][A-Za-z0-9_]*`)
)

// TestPathsExist: every repository path a page names in a code span, and
// every relative link, exists; a path with a placeholder (<user>, *, $VAR)
// is left alone, "internal/pkg.Name" names the package's directory, and a
// bare file name ("config.env") is one somewhere in the repository.
func TestPathsExist(t *testing.T) {
	bases := baseNames(t)
	checked := 0
	for name, text := range pages(t) {
		for _, m := range repoPath.FindAllStringSubmatch(text, -1) {
			p := m[1]
			if strings.ContainsAny(p, "<>*$({") {
				continue
			}
			checked++
			if !strings.Contains(p, "/") && bases[p] {
				continue
			}
			if !exists(p) && !exists(filepath.Join(filepath.Dir(name), p)) && !exists(packageOf(p)) {
				t.Errorf("%s names %s, which does not exist", name, p)
			}
		}
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			p, _, _ := strings.Cut(m[1], "#")
			if p == "" || strings.Contains(p, "://") || strings.HasPrefix(p, "mailto:") {
				continue
			}
			checked++
			if !exists(filepath.Join(filepath.Dir(name), p)) {
				t.Errorf("%s links to %s, which does not exist", name, m[1])
			}
		}
	}
	if checked == 0 {
		t.Error("no path found in the pages: is the pattern broken?")
	}
}

// baseNames returns the names of the repository's files.
func baseNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, path := range repoFiles(t, "bin") {
		names[filepath.Base(path)] = true
	}
	return names
}

// packageOf turns "internal/activity.Report" into "internal/activity".
func packageOf(p string) string {
	dir, base := filepath.Split(p)
	if i := strings.Index(base, "."); i > 0 {
		return dir + base[:i]
	}
	return p
}

func exists(p string) bool {
	_, err := os.Stat(filepath.Join(root, p))
	return err == nil
}

var (
	qualifiedTest = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.((?:Test|Fuzz|Benchmark)[A-Z][A-Za-z0-9_]*)`)
	placedTest    = regexp.MustCompile("`((?:Test|Fuzz|Benchmark)[A-Z][A-Za-z0-9_]*)` \\(`?((?:internal|cmd|manifests|bench|charts)(?:/[a-z0-9_-]+)*)`?[:),]")
)

// TestTestNamesExist: every test, fuzz target or benchmark a page names as
// evidence is a function of a test file of the main module, in the package
// the page puts it ("authapi.TestBudget", "`TestX` (`cmd/authapi`)").
func TestTestNamesExist(t *testing.T) {
	dirs := map[string][]string{}
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark)[A-Z][A-Za-z0-9_]*)\(`)
	for _, path := range repoFiles(t, "bin", "artifacts") {
		if !strings.HasSuffix(path, "_test.go") {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, m := range decl.FindAllStringSubmatch(string(data), -1) {
			dirs[m[1]] = append(dirs[m[1]], rel)
		}
	}
	for name, text := range pages(t) {
		for _, n := range testName.FindAllString(text, -1) {
			if dirs[n] == nil {
				t.Errorf("%s names %s, which no test file declares", name, n)
			}
		}
		flat := strings.Join(strings.Fields(text), " ")
		for _, m := range qualifiedTest.FindAllStringSubmatch(flat, -1) {
			if dirs[m[2]] != nil && !slices.ContainsFunc(dirs[m[2]], func(d string) bool { return filepath.Base(d) == m[1] }) {
				t.Errorf("%s names %s; it is declared in %v", name, m[0], dirs[m[2]])
			}
		}
		for _, m := range placedTest.FindAllStringSubmatch(flat, -1) {
			if dirs[m[1]] != nil && !slices.Contains(dirs[m[1]], m[2]) {
				t.Errorf("%s puts %s in %s; it is declared in %v", name, m[1], m[2], dirs[m[1]])
			}
		}
	}
}
