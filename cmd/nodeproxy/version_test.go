package main

import (
	"regexp"
	"testing"
)

func TestVersion(t *testing.T) {
	code, out, errOut := runCmd(t, []string{"--version"}, nil)
	if code != 0 {
		t.Fatalf("--version exit %d: %s", code, errOut)
	}
	if !regexp.MustCompile(`^nodeproxy version \S+, revision \S+, go\S+\n$`).MatchString(out) {
		t.Errorf("--version printed %q", out)
	}
}
