package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/settings"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, env(nil), &out, &errOut); code != 0 {
		t.Fatalf("--help exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"Usage: nodeproxy", "--node-name [NODE_NAME]", "--max-body-mb [MAX_BODY_MB]",
		"[MAX_IN_FLIGHT_PER_USER]", "[WS_MAX_MESSAGE_BYTES]", "[UPSTREAM_HEADER_ALLOWLIST]", "[DSH_LOG_TAIL_LINES]",
		"[COOKIE_SECURE]", "[COOKIE_NAME]", "[AUTHAPI_URL]", "[JWKS_URL]", "[LOG_ROOT]"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

func TestEnvThenFlags(t *testing.T) {
	c, err := load([]string{"--max-body-mb", "7", "--write-timeout=90"}, env(map[string]string{
		"NODE_NAME": "n1", "MAX_BODY_MB": "3", "MAX_IN_FLIGHT_PER_USER": "5", "COOKIE_SECURE": "false",
		"ALLOW_INSECURE_COOKIES": "1", "UPSTREAM_HEADER_ALLOWLIST": "Accept, X-Custom", "LISTEN_ADDR": ":8443",
	}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if c.NodeName != "n1" || c.MaxBodyMB != 7 || c.MaxInFlightPerUser != 5 || c.CookieSecure || c.WriteTimeout != 90*time.Second {
		t.Errorf("config %+v", c)
	}
	if got := settings.SplitList(c.HeaderAllowlist); len(got) != 2 || got[1] != "X-Custom" {
		t.Errorf("allowlist %q", got)
	}
	if c.peerPort() != 8443 || c.jwksURL() != "http://authapi.sandgate.svc:8080/.well-known/jwks.json" {
		t.Errorf("peer port %d JWKS %q", c.peerPort(), c.jwksURL())
	}
}

func TestValidateReportsEverything(t *testing.T) {
	c, err := load(nil, env(map[string]string{
		"MAX_BODY_MB": "lots", "COOKIE_SECURE": "false", "TRUSTED_PROXIES": "10.0.0.0/8,nope", "LOG_LEVEL": "loud",
		"WS_MAX_MESSAGE_BYTES": "0", "LISTEN_ADDR": "8080", "JWKS_URL": "ftp://x",
	}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	err = c.validate()
	for _, want := range []string{`MAX_BODY_MB="lots"`, "ALLOW_INSECURE_COOKIES", "NODE_NAME must not be empty", `"nope"`,
		"LOG_LEVEL", "WS_MAX_MESSAGE_BYTES 0", "LISTEN_ADDR", "JWKS_URL"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("validate() = %v, want %q", err, want)
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), nil, env(nil), &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "NODE_NAME") {
		t.Errorf("run without NODE_NAME: exit %d, %q", code, errOut.String())
	}
}
