// Command sandgate-cluster brings up a real two-node Kubernetes cluster on
// this machine without Docker (see internal/clustertools/localcluster), installs
// sandgate on it from the repository's manifests, prints each node's
// entry, and keeps it running until Ctrl-C; then it removes everything it
// made and checks that nothing is left.
//
//	sandgate-cluster up     bring up, install, serve until SIGINT/SIGTERM
//	sandgate-cluster down   remove what a killed run left
//	sandgate-cluster node   run one node (started by up inside the node's namespaces)
//	sandgate-cluster enforcer  name the NetworkPolicy enforcer this kernel runs
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/sandgate/sandgate/internal/clustertools/localcluster"
	"github.com/sandgate/sandgate/internal/settings"
)

func main() {
	settings.Exit(func(ctx context.Context) int { return run(ctx, os.Args[1:], os.Stdout, os.Stderr) })
}

const usage = `usage: sandgate-cluster up|down|node|enforcer [flags]

  up    bring up a real two-node cluster (kubelet, containerd, runc, CNI,
        kube-proxy, CoreDNS), install sandgate from manifests/ and serve
        until SIGINT/SIGTERM, then remove everything and check for leftovers;
        with --control-socket it also ends and starts the agent-sandbox
        controller stand-in on request (a controller outage or upgrade)
  down  remove what a killed run left, and check for leftovers
  node  run one node; up starts it inside the node's namespaces
  enforcer
        print the NetworkPolicy enforcer up will run on this kernel:
        kube-network-policies where nftables can queue packets to
        userspace, else kube-router (make builds only that one)

Run '<command> --help' for the flags of each. Needs root.
`

// run is main without the process: 0 on success, 1 on failure, 2 on a
// usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var err error
	switch args[0] {
	case "up":
		var o upOptions
		if err := o.parse(args[1:], os.Getenv, stderr); err != nil {
			return usageCode(err, stderr)
		}
		err = up(ctx, o, stdout, log)
	case "down":
		fs := flag.NewFlagSet("down", flag.ContinueOnError)
		fs.SetOutput(stderr)
		data := fs.String("data", localcluster.DefaultPaths.Data, "the cluster's data directory")
		if err := fs.Parse(args[1:]); err != nil {
			return usageCode(err, stderr)
		}
		err = down(ctx, localcluster.Paths{Data: *data}, stdout)
	case "node":
		fs := flag.NewFlagSet("node", flag.ContinueOnError)
		fs.SetOutput(stderr)
		dir := fs.String("dir", "", "the node's directory, holding node.json")
		if err := fs.Parse(args[1:]); err != nil {
			return usageCode(err, stderr)
		}
		err = localcluster.RunNode(ctx, *dir, log)
	case "enforcer":
		fs := flag.NewFlagSet("enforcer", flag.ContinueOnError)
		fs.SetOutput(stderr)
		if err := fs.Parse(args[1:]); err != nil {
			return usageCode(err, stderr)
		}
		var name string
		if name, err = localcluster.PolicyEnforcerForKernel(ctx); err == nil {
			fmt.Fprintln(stdout, name)
		}
	default:
		fmt.Fprintf(stderr, "unknown command %q\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		log.Error("failed", "command", args[0], "err", err)
		return 1
	}
	return 0
}

// usageCode is the exit code for a flag error: 0 for --help, else 2 after
// saying what was wrong (the flag package has said it for its own errors).
func usageCode(err error, stderr io.Writer) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if errors.Is(err, errArgs) {
		fmt.Fprintln(stderr, err)
	}
	return 2
}

// errArgs reports arguments after the flags, which no command takes.
var errArgs = errors.New("unexpected arguments")

// down removes a killed run's leftovers and fails if anything remains.
func down(ctx context.Context, p localcluster.Paths, stdout io.Writer) error {
	if err := localcluster.Down(ctx, p); err != nil {
		return err
	}
	if left := localcluster.Leftovers(ctx, p); len(left) > 0 {
		return fmt.Errorf("left on the machine: %v", left)
	}
	fmt.Fprintln(stdout, "nothing of the cluster is left on this machine")
	return nil
}
