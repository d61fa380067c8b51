package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// runCmd runs the command with args and the environment e, and returns
// its exit code, stdout and stderr.
func runCmd(t *testing.T, args []string, e map[string]string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(t.Context(), args, testkit.Env(e), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestHelp(t *testing.T) {
	code, out, errOut := runCmd(t, []string{"--help"}, nil)
	if code != 0 {
		t.Fatalf("--help exit %d: %s", code, errOut)
	}
	for _, want := range []string{"Usage: nodeproxy", "--node-name [NODE_NAME]", "--max-body-mb [MAX_BODY_MB]",
		"[MAX_IN_FLIGHT_PER_USER]", "[WS_MAX_MESSAGE_BYTES]", "[UPSTREAM_HEADER_ALLOWLIST]", "[DSH_LOG_TAIL_LINES]",
		"[COOKIE_SECURE]", "[COOKIE_NAME]", "[AUTHAPI_URL]", "[JWKS_URL]", "[LOG_ROOT]",
		"--tls-cert-file [TLS_CERT_FILE]", "[TLS_KEY_FILE]", "[TLS_LISTEN_ADDR]",
		"--token-source [TOKEN_SOURCE]", "--token-pattern [TOKEN_PATTERN]", "[TOKEN_STREAM]", "[KUBELET_PODS_DIR]", "[TOKEN_FILE]"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func TestInvalidConfigurationExits2(t *testing.T) {
	if code, _, errOut := runCmd(t, nil, nil); code != 2 || !strings.Contains(errOut, "NODE_NAME") {
		t.Errorf("run without NODE_NAME: exit %d, %q", code, errOut)
	}
}
