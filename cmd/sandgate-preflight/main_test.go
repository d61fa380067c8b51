package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunExitCodes(t *testing.T) {
	// A kubeconfig whose server refuses connections: the cluster cannot
	// be read, which is a failure (1), not a pass.
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "http://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		env    map[string]string
		code   int
		stdout string
		stderr string
	}{
		{"help", []string{"--help"}, nil, 0, "networkpolicy", ""},
		{"version", []string{"--version"}, nil, 0, "sandgate-preflight", ""},
		{"stray argument", []string{"check"}, nil, 2, "", "unexpected arguments"},
		{"bad CIDR from the environment", nil, map[string]string{"ALLOWED_CIDRS": "10.0.0.0/33"}, 2, "", "ALLOWED_CIDRS"},
		{"bad port", []string{"--proxy-port=0"}, nil, 2, "", "proxy port 0"},
		{"cluster unreachable", []string{"--kubeconfig=" + kubeconfig, "--timeout=5s"}, nil, 1, "", "list namespaces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), tc.args, testkit.Env(tc.env), &stdout, &stderr)
			if code != tc.code || !strings.Contains(stdout.String(), tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d with %q and %q", code, stdout.String(), stderr.String(), tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}
