// Command nodeproxy runs sandgate's node proxy, one per node: it serves
// /u/<user>/** from the user's sandbox pod and passes every other path to
// the auth API. See internal/requestpath/nodeproxyd for its settings and assembly.
package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/sandgate/sandgate/internal/drain"
	"github.com/sandgate/sandgate/internal/requestpath/nodeproxyd"
	"github.com/sandgate/sandgate/internal/settings"
)

func main() { settings.Main(run) }

// run is main without the process: 0 on success, 1 on failure, 2 on a
// usage error.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "drain" {
		d := nodeproxyd.Defaults()
		return drain.Command{OpsAddr: d.OpsAddr, Delay: d.DrainDelay, LogLevel: d.LogLevel}.Run(ctx, "nodeproxy", args[1:], getenv, stdout, stderr)
	}
	c, err := nodeproxyd.Load(args, getenv, stdout)
	return settings.Serve("nodeproxy", stderr, err, c.Validate, c.LogLevel, func(log *slog.Logger) error {
		d, err := nodeproxyd.Assemble(c, nodeproxyd.Deps{Logger: log})
		if err != nil {
			return err
		}
		return d.Run(ctx)
	})
}
