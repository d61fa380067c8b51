package main

import (
	"io"
	"testing"
)

// TestCRDsFlag: --crds wins over AGENT_SANDBOX_CRDS, which wins over the
// manifests' crds/ (an empty value, resolved by up).
func TestCRDsFlag(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  string
		want string
	}{
		{nil, "", ""},
		{nil, "/upstream/crds", "/upstream/crds"},
		{[]string{"--crds", "/other"}, "/upstream/crds", "/other"},
	} {
		var o upOptions
		getenv := func(k string) string {
			if k == "AGENT_SANDBOX_CRDS" {
				return tt.env
			}
			return ""
		}
		if err := o.parse(tt.args, getenv, io.Discard); err != nil || o.crds != tt.want {
			t.Errorf("parse(%q) with AGENT_SANDBOX_CRDS=%q: crds %q, err %v; want %q", tt.args, tt.env, o.crds, err, tt.want)
		}
	}
}
