package doccheck

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const root = "../../.."

// readVersions parses versions.env: KEY=value lines, # comments.
func readVersions(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "versions.env"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, val, ok := strings.Cut(line, "=")
		if !ok || k == "" || val == "" || strings.ContainsAny(line, " \t\"'") {
			t.Errorf("versions.env: %q is not KEY=value (no spaces or quotes, so make and sh read it alike)", line)
			continue
		}
		v[k] = val
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return v
}

// mentionFiles are the files that may name a pinned version: docs,
// manifests, Go code and the Makefile, outside the tools modules.
func mentionFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, path := range repoFiles(t, "tools", "bin", "artifacts", "node_modules") {
		switch filepath.Ext(path) {
		case ".go", ".md", ".yaml", ".yml", ".json":
			files = append(files, path)
		}
		if filepath.Base(path) == "Makefile" {
			files = append(files, path)
		}
	}
	return files
}

// A version mention: the pattern's last group is the version it names. A
// version followed by "+" is a minimum for a feature, not a pin, and is
// left alone.
var (
	kubeMention   = regexp.MustCompile(`(?i)(?:kube\w*|bin/|kubernetes)[^\n]{0,40}?\b(v1\.\d+\.\d+)\b[^+]`)
	clientMention = regexp.MustCompile(`(?m)^\s*k8s\.io/(?:api|apimachinery|client-go|apiextensions-apiserver) (v0\.\d+)\.\d+`)
	sandboxPin    = regexp.MustCompile(`(?i)(agent-sandbox|AGENT_SANDBOX_VERSION|AGENT_SANDBOX_OLDEST)[^\n]{0,60}?\b(v\d+\.\d+\.(?:\d+|x))\b[^+]`)
	semver        = regexp.MustCompile(`^v(\d+)\.(\d+)\.(\d+)$`)
)

// olderThan compares two vX.Y.Z versions.
func olderThan(a, b string) bool {
	ma, mb := semver.FindStringSubmatch(a), semver.FindStringSubmatch(b)
	for i := 1; i <= 3; i++ {
		x, _ := strconv.Atoi(ma[i])
		y, _ := strconv.Atoi(mb[i])
		if x != y {
			return x < y
		}
	}
	return false
}

// TestVersionsAgree: versions.env is the one pin of the Kubernetes and
// agent-sandbox versions; the Makefile reads it, and every doc, manifest,
// go.mod and Go constant that names one of them names the pinned one (a
// release line "vX.Y.x" agrees with any vX.Y.Z). agent-sandbox has two
// pins, the recommended release (AGENT_SANDBOX_VERSION) and the oldest
// supported one (AGENT_SANDBOX_OLDEST): a mention after either name must
// be that one, a mention after "agent-sandbox" one of the two.
func TestVersionsAgree(t *testing.T) {
	v := readVersions(t)
	kube, sandbox, oldest := v["KUBE_VERSION"], v["AGENT_SANDBOX_VERSION"], v["AGENT_SANDBOX_OLDEST"]
	if !regexp.MustCompile(`^v1\.\d+\.\d+$`).MatchString(kube) || !semver.MatchString(sandbox) || !semver.MatchString(oldest) {
		t.Fatalf("versions.env pins KUBE_VERSION=%q AGENT_SANDBOX_VERSION=%q AGENT_SANDBOX_OLDEST=%q, want vX.Y.Z each", kube, sandbox, oldest)
	}
	if olderThan(sandbox, oldest) {
		t.Errorf("versions.env recommends agent-sandbox %s, older than the oldest supported %s", sandbox, oldest)
	}
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^include versions\.env$`).Match(makefile) {
		t.Error("the Makefile does not include versions.env")
	}
	if !strings.Contains(string(makefile), "agent-sandbox-$(AGENT_SANDBOX_OLDEST)/crds") {
		t.Error("the Makefile's default AGENT_SANDBOX_CRDS is not upstream's CRDs of AGENT_SANDBOX_OLDEST")
	}
	for k := range v {
		if regexp.MustCompile(`(?m)^` + k + `\s*[:?]?=`).Match(makefile) {
			t.Errorf("the Makefile sets %s itself instead of reading versions.env", k)
		}
	}

	kubeMinor := strings.Join(strings.Split(kube, ".")[:2], ".")
	clientMinor := "v0." + strings.Split(kube, ".")[1]
	line := func(v string) string { return strings.Join(strings.Split(v, ".")[:2], ".") + ".x" }
	sandboxPins := map[string][]string{
		"AGENT_SANDBOX_VERSION": {sandbox, line(sandbox)},
		"AGENT_SANDBOX_OLDEST":  {oldest, line(oldest)},
		"AGENT-SANDBOX":         {sandbox, line(sandbox), oldest, line(oldest)},
	}
	mentions := 0
	check := func(path, text string, re *regexp.Regexp, agrees func(m []string) bool, want string) {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			mentions++
			t.Logf("%s: %s", path, strings.TrimSpace(m[0]))
			if got := m[len(m)-1]; !agrees(m) {
				t.Errorf("%s names %s where versions.env pins %s: %q", path, got, want, strings.TrimSpace(m[0]))
			}
		}
	}
	is := func(want ...string) func([]string) bool {
		return func(m []string) bool { return slices.Contains(want, m[len(m)-1]) }
	}
	for _, path := range mentionFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		check(path, text, kubeMention, is(kube), kube)
		check(path, text, sandboxPin, func(m []string) bool {
			return slices.Contains(sandboxPins[strings.ToUpper(m[1])], m[2])
		}, sandbox+" (recommended) or "+oldest+" (oldest supported)")
	}
	for _, mod := range []string{"go.mod", "tools/kube/go.mod"} {
		data, err := os.ReadFile(filepath.Join(root, mod))
		if err != nil {
			t.Fatal(err)
		}
		// v0.0.0 is the placeholder k8s.io/kubernetes requires its staging
		// modules at, replaced by the real versions.
		check(mod, string(data), clientMention, is(clientMinor, "v0.0"), clientMinor+".x")
		check(mod, string(data), regexp.MustCompile(`k8s\.io/kubernetes (v1\.\d+\.\d+)`), is(kube), kube)
	}
	if mentions == 0 {
		t.Errorf("no version mention found at all: the patterns are broken (Kubernetes minor %s)", kubeMinor)
	}
}
