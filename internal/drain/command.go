package drain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/sandgate/sandgate/internal/settings"
)

// Command is the drain subcommand's settings. Of its daemon's settings it
// reads only the three it uses, so the preStop hook never fails on one it
// does not: a TLS or key file that a Secret update changed under the
// running daemon would otherwise cost the drain, and the endpoints would
// go on sending requests to a process about to stop.
type Command struct {
	OpsAddr  string
	Delay    time.Duration
	LogLevel string
}

// Run runs "<daemon> drain": the settings start from c, the daemon's own
// defaults, and are read from the environment and args like the daemon's.
// The exit code is settings.Serve's.
func (c Command) Run(ctx context.Context, daemon string, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	name := daemon + " drain"
	list := []settings.Setting{
		settings.Var("ops-addr", "OPS_ADDR", "the daemon's ops listener, asked over loopback to drain", settings.String(&c.OpsAddr)),
		settings.Var("drain-delay", "DRAIN_DELAY", "how long to hold SIGTERM back after /readyz starts failing", settings.Duration(&c.Delay)),
		settings.Var("log-level", "LOG_LEVEL", "debug, info, warn or error", settings.String(&c.LogLevel)),
	}
	problems, err := settings.Load(name, list, args, getenv, stdout, func() {
		fmt.Fprintf(stdout, "Usage: %s [flags]\n\nThe pod's preStop hook: makes the running %s's /readyz fail at once and\nreturns after DRAIN_DELAY. It reads only these of the daemon's settings:\n\n", name, daemon)
		settings.Usage(stdout, list)
	})
	validate := func() error {
		if c.OpsAddr == "" {
			problems = append(problems, errors.New("OPS_ADDR must not be empty"))
		}
		if c.Delay < 0 {
			problems = append(problems, fmt.Errorf("DRAIN_DELAY %v must not be negative", c.Delay))
		}
		if _, err := settings.Level(c.LogLevel); err != nil {
			problems = append(problems, err)
		}
		return errors.Join(problems...)
	}
	return settings.Serve(name, stderr, err, validate, c.LogLevel, func(*slog.Logger) error {
		return Request(ctx, c.OpsAddr, c.Delay)
	})
}
