package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"
)

func TestVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"--version"}, env(nil), &out, &errOut); code != 0 {
		t.Fatalf("--version exit %d: %s", code, errOut.String())
	}
	if !regexp.MustCompile(`^nodeproxy version \S+, revision \S+, go\S+\n$`).MatchString(out.String()) {
		t.Errorf("--version printed %q", out.String())
	}
}
