package main

import (
	"bytes"
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/clustertools/controlplane"
	"github.com/sandgate/sandgate/internal/testing/sim/controller"
)

func noEnv(string) string { return "" }

func TestFlags(t *testing.T) {
	root := filepath.Join("..", "..")
	cfg, err := parseFlags([]string{
		"--manifests", filepath.Join(root, "manifests", "sandbox"), "--crds", filepath.Join(root, "manifests", "crds"),
		"--authapi-manifests", filepath.Join(root, "manifests", "authapi"), "--nodeproxy-manifests", filepath.Join(root, "manifests", "daemonset"),
		"--nodes", "3", "--warm-delay", "250ms", "--log-level", "debug", "--http-port", "9000",
		"--agent-sandbox-release", "v0.5.6", "--idle-timeout", "30s", "--report-interval", "2s",
	}, noEnv, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.nodes != 3 || cfg.delays.WarmAdoption != 250*time.Millisecond || cfg.logLevel.String() != "DEBUG" || cfg.namespace != "" || cfg.idleTimeout != 30*time.Second || cfg.reportEvery != 2*time.Second ||
		cfg.httpPort != 9000 || cfg.httpHost != "127.0.0.1" || cfg.authReplicas != 2 || cfg.binDir != "bin" ||
		cfg.release != string(controller.ReleaseV05) {
		t.Errorf("config %+v", cfg)
	}

	var out bytes.Buffer
	if _, err := parseFlags([]string{"--help"}, noEnv, &out); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "Ctrl-C") {
		t.Errorf("--help: %v, %q", err, out.String())
	}
	_, err = parseFlags([]string{"--nodes", "0", "--manifests", "/nonexistent", "--cold-delay", "-1s",
		"--authapi-replicas", "0", "--http-port", "0", "--http-host", "", "--agent-sandbox-release", "v2", "--idle-timeout", "1s"}, noEnv, &bytes.Buffer{})
	for _, want := range []string{"--nodes", "--manifests", "delays", "--authapi-replicas", "--http-port", "--http-host", "--authapi-manifests", "--agent-sandbox-release", "--idle-timeout"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validation error %v does not mention %s", err, want)
		}
	}
}

// TestSandboxManifests checks that the demo can apply the repository's
// sandbox manifests: every kind in them is one it knows.
func TestSandboxManifests(t *testing.T) {
	objs, err := controlplane.ReadManifests(filepath.Join("..", "..", "manifests", "sandbox"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, o := range objs {
		if _, ok := resources[o.GroupVersionKind()]; !ok {
			t.Errorf("%s %s: kind the demo cannot apply", o.GetKind(), o.GetName())
		}
		kinds[o.GetKind()] = true
	}
	if !kinds["SandboxTemplate"] || !kinds["SandboxWarmPool"] {
		t.Errorf("kinds %v lack the template or the pool", kinds)
	}
}
