package localcluster

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// run runs a host command and returns its standard output; a failure
// carries the command line and what it printed.
func run(ctx context.Context, name string, args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout = &out
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// runIn runs a command in node n's network namespace.
func runIn(ctx context.Context, n node, name string, args ...string) (string, error) {
	return run(ctx, "nsenter", append([]string{"--net=" + n.netnsPath(), "--", name}, args...)...)
}
