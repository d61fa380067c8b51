// Command agent-standin is a STAND-IN for DSH Web, the agent web app that
// runs in every sandbox pod, for test clusters where the real app is not
// available. It runs internal/testing/sim/agentapp, the app the simulated kubelet
// runs in-process, as a container process, with the arguments and
// environment manifests/sandbox/template.yaml gives the real app:
//
//	agent-standin web --host 0.0.0.0 --port 3080
//
// with HOME, DSH_HOME (the persistent volume: the conversation and the
// workspace live there and survive suspend and resume) and
// DSH_TRUSTED_HOSTS. It prints the launch line with the token to stdout,
// where the container runtime's CRI log carries it to the node proxy, logs
// one stdout line per request, and shuts down gracefully on SIGTERM. With
// --token-file (or DSH_TOKEN_FILE) it also writes the token to that file,
// the interface the seed proposes for DSH Web, for node proxies running
// with TOKEN_SOURCE=file.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/sandgate/sandgate/internal/settings"
)

func main() { settings.Main(run) }

// run is main without the process: 0 after a clean shutdown, 1 on failure,
// 2 on a usage error.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, err := load(args, getenv, stdout)
	if code, ok := settings.Loaded("agent-standin", stderr, err, o.Validate); !ok {
		return code
	}
	if err := serve(ctx, o, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "dsh web: error: %v\n", err)
		return 1
	}
	return 0
}

// serve binds the listener and runs the app until ctx ends.
func serve(ctx context.Context, o Options, stdout, stderr io.Writer) error {
	ln, err := net.Listen("tcp", net.JoinHostPort(o.Host, strconv.Itoa(o.Port)))
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	return o.app(stdout, stderr).Serve(ctx, ln)
}
