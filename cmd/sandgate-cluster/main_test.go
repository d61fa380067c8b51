package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage: sandgate-cluster up|down|node"},
		{[]string{"--help"}, 0, "usage: sandgate-cluster"},
		{[]string{"start"}, 2, `unknown command "start"`},
		{[]string{"up", "--help"}, 0, "-images-dir"},
		{[]string{"up", "--help"}, 0, "POST /sandbox-controller/start[?release=v0.5.6]"},
		{[]string{"up", "--nodes"}, 2, "flag needs an argument"},
		{[]string{"up", "extra"}, 2, `unexpected arguments ["extra"]`},
		{[]string{"down", "--help"}, 0, "-data"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), tt.args, &out, &errb)
		if code != tt.code || !strings.Contains(errb.String()+out.String(), tt.want) {
			t.Errorf("run(%q) = %d, output %q; want %d and %q", tt.args, code, errb.String(), tt.code, tt.want)
		}
	}
}
