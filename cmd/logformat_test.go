// Package cmd_test runs the shipped binaries as processes.
package cmd_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/gobuild"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// logBinaries are the shipped servers that use client-go, each with the
// settings that make it run against an API server that refuses every
// connection, so client-go itself logs its list and watch errors (at
// debug: it retries them quietly).
func logBinaries(t *testing.T, kubeconfig string) map[string]map[string]string {
	common := map[string]string{"KUBECONFIG": kubeconfig, "NAMESPACE": "sandgate", "LOG_LEVEL": "debug"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range common {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	return map[string]map[string]string{
		"authapi": with("LISTEN_ADDR", testkit.FreeAddr(t), "INTERNAL_ADDR", testkit.FreeAddr(t), "OPS_ADDR", testkit.FreeAddr(t),
			"COOKIE_SECURE", "false", "ALLOW_INSECURE_COOKIES", "1", "POD_NAME", "authapi-logtest"),
		"nodeproxy": with("LISTEN_ADDR", testkit.FreeAddr(t), "OPS_ADDR", testkit.FreeAddr(t), "NODE_NAME", "node-a",
			"COOKIE_SECURE", "false", "ALLOW_INSECURE_COOKIES", "1", "AUTHAPI_URL", "http://"+closedAddr(t),
			"LOG_ROOT", t.TempDir()),
		"sandbox-controller-standin": with(),
	}
}

// TestStderrIsJSON builds each binary, runs it until client-go has logged
// an error through it (a component=client-go line with an err attribute:
// the refused list and watch), stops it with SIGTERM and parses every line
// it wrote to stderr as one JSON object.
func TestStderrIsJSON(t *testing.T) {
	bin := t.TempDir()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(unreachableKubeconfig(closedAddr(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	bins := logBinaries(t, kubeconfig)
	var pkgs []string
	for name := range bins {
		pkgs = append(pkgs, "./"+name)
	}
	if out, err := gobuild.Command(t.Context(), "", bin, pkgs...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for name, env := range bins {
		t.Run(name, func(t *testing.T) { checkStderr(t, filepath.Join(bin, name), env) })
	}
}

// checkStderr runs bin with env, asks it to stop once client-go has logged,
// and fails on any stderr line that is not a JSON object.
func checkStderr(t *testing.T, bin string, env map[string]string) {
	cmd := exec.CommandContext(t.Context(), bin)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	klogSeen := false
	lines := 0
	watchdog := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer watchdog.Stop()
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		lines++
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Errorf("stderr line %d is not JSON: %q", lines, sc.Text())
			continue
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := rec[k]; !ok {
				t.Errorf("stderr line %d has no %q: %s", lines, k, sc.Text())
			}
		}
		if _, hasErr := rec["err"]; hasErr && rec["component"] == "client-go" && !klogSeen {
			klogSeen = true
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Error(err)
	}
	// The exit status is not this test's business: the stand-in exits 1
	// when stopped before its caches synced.
	_ = cmd.Wait()
	if !klogSeen {
		t.Errorf("no client-go error line in %d lines of stderr before the process ended (%v)", lines, cmd.ProcessState)
	}
}

func unreachableKubeconfig(addr string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: refused
  cluster:
    server: https://%s
    insecure-skip-tls-verify: true
contexts:
- name: refused
  context:
    cluster: refused
    user: nobody
users:
- name: nobody
  user: {}
current-context: refused
`, addr)
}

// closedAddr is a loopback address where nothing listens: connections to it
// are refused.
func closedAddr(t *testing.T) string { return testkit.FreeAddr(t) }
