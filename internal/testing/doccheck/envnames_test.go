package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// notSettings are upper-case names the pages use that are no environment
// variable of this repository, each with the reason the page gives.
var notSettings = map[string]string{
	"AUDIT_LOG":       "docs/audit.md: there is no such setting, the audit stream is part of the log",
	"FLASH_TTL":       "docs/api.md, docs/security.md: the seed's setting, no longer used",
	"DAC_READ_SEARCH": "docs/handshake.md: a Linux capability",
	// docs/install.md: oauth2-proxy's own settings, in the Secret its
	// Deployment (manifests/components/sso) reads them from.
	"OAUTH2_PROXY_CLIENT_ID":     "oauth2-proxy's",
	"OAUTH2_PROXY_CLIENT_SECRET": "oauth2-proxy's",
	"OAUTH2_PROXY_COOKIE_SECRET": "oauth2-proxy's",
}

var upperName = regexp.MustCompile(`\b[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]\b`)

// TestEnvNames: every environment-style name (UPPER_CASE with an
// underscore) in the README and docs/ is one the repository reads or sets:
// a setting of a binary (its --help), a pin in versions.env, a variable the
// Makefile uses, one the manifests set, one Go code looks up, or a row of
// docs/configuration.md that says it is not a setting or what replaced it.
func TestEnvNames(t *testing.T) {
	known := map[string]bool{}
	for _, bin := range binaries {
		for n := range helpSettings(t, bin) {
			known[n] = true
		}
	}
	for n := range readVersions(t) {
		known[n] = true
	}
	for _, n := range makeVariables(t) {
		known[n] = true
	}
	for _, n := range manifestEnv(t) {
		known[n] = true
	}
	for _, n := range goEnvLookups(t) {
		known[n] = true
	}
	for _, r := range configRows(t) {
		if strings.HasPrefix(r.where, "not a setting") || strings.HasPrefix(r.where, "replaced by ") {
			known[r.name] = true
		}
	}
	for n := range notSettings {
		known[n] = true
	}
	for name, text := range pages(t) {
		for _, n := range slices.Compact(slices.Sorted(slices.Values(upperName.FindAllString(text, -1)))) {
			if !known[n] {
				t.Errorf("%s names %s, which no binary, versions.env, the Makefile, the manifests or Go code reads or sets", name, n)
			}
		}
	}
}

// makeVariables returns the variables the Makefile assigns, expands or
// sets for a command of a recipe.
func makeVariables(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`\b([A-Z][A-Z0-9_]*)\s*[:?+]?=|\$[({]([A-Z][A-Z0-9_]*)[)}]`).FindAllStringSubmatch(string(data), -1) {
		names = append(names, m[1]+m[2])
	}
	return names
}

// manifestEnv returns the names manifests/ and examples/ give containers:
// env-file keys, env entries and $(VAR) references.
func manifestEnv(t *testing.T) []string {
	t.Helper()
	text := readAll(t, filepath.Join(root, "manifests")) + readAll(t, filepath.Join(root, "examples"))
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^([A-Z][A-Z0-9_]*)=|name: ([A-Z][A-Z0-9_]*)\b|\$\(([A-Z][A-Z0-9_]*)\)`).FindAllStringSubmatch(text, -1) {
		names = append(names, m[1]+m[2]+m[3])
	}
	return names
}

// envFuncs are the calls whose first argument names an environment
// variable: the os functions and the getenv functions passed in.
var envFuncs = []string{"Getenv", "LookupEnv", "Setenv", "getenv", "lookupEnv", "Var"}

// goEnvLookups returns the string literals the main module's Go code
// (tests included) passes to an environment lookup, or as the environment
// name of a settings.Var.
func goEnvLookups(t *testing.T) []string {
	t.Helper()
	return envLookups(t, repoFiles(t, "tools", "testdata", "bin", "artifacts"))
}

// envLookups is goEnvLookups over the .go files among paths.
func envLookups(t *testing.T, paths []string) []string {
	t.Helper()
	var names []string
	fset := token.NewFileSet()
	for _, path := range paths {
		if !strings.HasSuffix(path, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			var fn string
			switch f := call.Fun.(type) {
			case *ast.Ident:
				fn = f.Name
			case *ast.SelectorExpr:
				fn = f.Sel.Name
			}
			if !slices.Contains(envFuncs, fn) {
				return true
			}
			arg := call.Args[0]
			if fn == "Var" && len(call.Args) > 1 {
				arg = call.Args[1]
			}
			if lit, ok := arg.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					names = append(names, s)
				}
			}
			return true
		})
	}
	return names
}

// harnessDirs hold the test harness every integration test starts its API
// server through.
var harnessDirs = []string{"internal/testing/clustertest"}

// notHarnessSettings are names the harness reads that a person does not set.
var notHarnessSettings = map[string]string{"CI": "set by CI systems; under CI=true a missing AGENT_SANDBOX_CRDS fails"}

// TestHarnessSettings: every environment variable the test harness reads
// (such as AGENT_SANDBOX_CRDS, the CRDs every test API server gets) is
// named in docs/development.md, where the settings of make test are described.
func TestHarnessSettings(t *testing.T) {
	dev := pages(t)[developmentPage]
	found := 0
	for _, dir := range harnessDirs {
		paths, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		paths = slices.DeleteFunc(paths, func(p string) bool { return strings.HasSuffix(p, "_test.go") })
		for _, n := range slices.Compact(slices.Sorted(slices.Values(envLookups(t, paths)))) {
			found++
			if _, ok := notHarnessSettings[n]; !ok && !strings.Contains(dev, "`"+n+"`") {
				t.Errorf("%s reads %s; %s does not name it (as `%s`)", dir, n, developmentPage, n)
			}
		}
	}
	if found == 0 {
		t.Error("the harness reads no environment variable: is envLookups broken?")
	}
}
