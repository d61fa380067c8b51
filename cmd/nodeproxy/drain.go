package main

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/sandgate/sandgate/internal/drain"
	"github.com/sandgate/sandgate/internal/settings"
)

// drainMargin is how much longer than DRAIN_DELAY "drain" waits for the
// proxy's answer; the kubelet's grace period bounds it anyway.
const drainMargin = 5 * time.Second

// runDrain is "nodeproxy drain", the pod's preStop hook: run inside the
// container, it asks this pod's proxy over loopback to fail /readyz and
// returns once DRAIN_DELAY has passed, when the kubelet sends SIGTERM.
func runDrain(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	c, err := load(args, getenv, stdout)
	return settings.Serve("nodeproxy drain", stderr, err, c.validate, c.LogLevel, func(*slog.Logger) error {
		return drain.Request(ctx, c.OpsAddr, c.DrainDelay, drainMargin)
	})
}
