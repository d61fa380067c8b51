package tools_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// keptApart names the modules one tools module keeps at its own versions,
// by module path prefix, and why.
var keptApart = map[string]map[string]string{
	"etcd":       {"go.etcd.io/": "the etcd server builds from its own v3.6 line; kube-apiserver's etcd client is v3.7"},
	"kuberouter": {"github.com/docker/go-connections": "kube-router v2.1.0 imports docker/docker v25's client, which needs sockets.DialPipe (gone from go-connections v0.6 on)"},
	"traefik": {"": "Traefik v3.6.12 builds only at its own go.mod's versions (client-go v0.34, grpc v1.79), for make bench alone; " +
		"v3.7, whose versions are nearer ours, cannot build from the Go module proxy"},
}

// TestSharedVersions checks that every module two or more tools modules
// build from resolves to one version in all of them: the build cache keys a
// package by its module's version, so one version is one compile for all.
func TestSharedVersions(t *testing.T) {
	users := map[string]map[string]string{} // module -> tools module -> version
	for tool, reqs := range resolved(t) {
		for mod, v := range reqs {
			if users[mod] == nil {
				users[mod] = map[string]string{}
			}
			users[mod][tool] = v
		}
	}
	var shared []string
	for mod, byTool := range users {
		if len(byTool) > 1 {
			shared = append(shared, mod)
		}
	}
	sort.Strings(shared)
	var listing []string
	for _, mod := range shared {
		versions := map[string][]string{}
		for tool, v := range users[mod] {
			if reason := apart(tool, mod); reason != "" {
				listing = append(listing, fmt.Sprintf("%s %s in %s, kept apart: %s", mod, v, tool, reason))
				continue
			}
			versions[v] = append(versions[v], tool)
		}
		for _, tools := range versions {
			sort.Strings(tools)
		}
		if len(versions) == 1 {
			for v, tools := range versions {
				listing = append(listing, fmt.Sprintf("%s %s in %s", mod, v, strings.Join(tools, " ")))
			}
			continue
		}
		newest := ""
		for v := range versions {
			if newest == "" || semver.Compare(v, newest) > 0 {
				newest = v
			}
		}
		var fix []string
		for v, tools := range versions {
			if v != newest {
				for _, tool := range tools {
					fix = append(fix, fmt.Sprintf("(cd tools/%s && go get %s@%s && go mod tidy)", tool, mod, newest))
				}
			}
		}
		sort.Strings(fix)
		t.Errorf("%s resolves to %d versions across the tools modules %v, so each is compiled apart; align on the newest:\n  %s\n(or, when a tool cannot build with it, add the module to keptApart with the reason)",
			mod, len(versions), versions, strings.Join(fix, "\n  "))
	}
	t.Logf("%d modules shared by two or more tools modules:\n  %s", len(shared), strings.Join(listing, "\n  "))
}

// TestSameBuildFlags checks that every build in the Makefile, of a tools
// module or of sandgate's own commands, uses GO_BUILD: a package built with
// other flags (cgo, paths kept) is compiled again, whatever its version.
// internal/gobuild checks that GO_BUILD's flags are the ones the tests and
// the demo build with.
func TestSameBuildFlags(t *testing.T) {
	f, err := os.Open("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tools := 0
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		definition := strings.HasPrefix(text, "GO_BUILD ")
		if !definition && (strings.Contains(text, "$(GO) build") || strings.Contains(text, "$(GO) run") && !strings.Contains(text, "-trimpath")) {
			t.Errorf("Makefile:%d builds without $(GO_BUILD): %s", line, strings.TrimSpace(text))
		}
		if !strings.Contains(text, "cd tools/") {
			continue
		}
		tools++
		if !strings.Contains(text, "&& $(GO_BUILD) ") {
			t.Errorf("Makefile:%d builds a tools module without $(GO_BUILD): %s", line, strings.TrimSpace(text))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if tools == 0 {
		t.Fatal("the Makefile builds no tools module: has the recipe changed shape?")
	}
}

// resolved reads each tools module's requirements, with its replacements
// applied: go mod tidy writes every module a build needs there, at the
// version it resolves to.
func resolved(t *testing.T) map[string]map[string]string {
	t.Helper()
	mods, err := filepath.Glob("*/go.mod")
	if err != nil || len(mods) < 2 {
		t.Fatalf("tools modules: %v %v", mods, err)
	}
	out := map[string]map[string]string{}
	for _, mod := range mods {
		data, err := os.ReadFile(mod)
		if err != nil {
			t.Fatal(err)
		}
		f, err := modfile.Parse(mod, data, nil)
		if err != nil {
			t.Fatalf("read %s: %v", mod, err)
		}
		reqs := map[string]string{}
		for _, r := range f.Require {
			reqs[r.Mod.Path] = r.Mod.Version
		}
		for _, r := range f.Replace {
			if _, ok := reqs[r.Old.Path]; ok && r.New.Version != "" {
				reqs[r.Old.Path] = r.New.Version
			}
		}
		out[filepath.Dir(mod)] = reqs
	}
	return out
}

func apart(tool, mod string) string {
	for prefix, reason := range keptApart[tool] {
		if strings.HasPrefix(mod, prefix) {
			return reason
		}
	}
	return ""
}
