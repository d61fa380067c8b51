package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, env(nil), &out, &errOut); code != 0 {
		t.Fatalf("--help exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"Usage: nodeproxy", "--node-name [NODE_NAME]", "--max-body-mb [MAX_BODY_MB]",
		"[MAX_IN_FLIGHT_PER_USER]", "[WS_MAX_MESSAGE_BYTES]", "[UPSTREAM_HEADER_ALLOWLIST]", "[DSH_LOG_TAIL_LINES]",
		"[COOKIE_SECURE]", "[COOKIE_NAME]", "[AUTHAPI_URL]", "[JWKS_URL]", "[LOG_ROOT]",
		"--tls-cert-file [TLS_CERT_FILE]", "[TLS_KEY_FILE]", "[TLS_LISTEN_ADDR]",
		"--token-source [TOKEN_SOURCE]", "--token-pattern [TOKEN_PATTERN]", "[TOKEN_STREAM]", "[KUBELET_PODS_DIR]", "[TOKEN_FILE]"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func TestInvalidConfigurationExits2(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), nil, env(nil), &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "NODE_NAME") {
		t.Errorf("run without NODE_NAME: exit %d, %q", code, errOut.String())
	}
}
