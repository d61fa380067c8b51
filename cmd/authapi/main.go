// Command authapi runs sandgate's auth API (accounts, JWT sessions, landing
// page) and, as `authapi jwt inspect`, checks a session token for operators;
// `authapi admin` runs the admin API (accounts and their actions).
// See internal/accountpath/authapid for its settings and assembly.
package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/sandgate/sandgate/internal/accountpath/authapid"
	"github.com/sandgate/sandgate/internal/drain"
	"github.com/sandgate/sandgate/internal/settings"
)

func main() {
	settings.Exit(func(ctx context.Context) int {
		return run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr)
	})
}

// run is main without the process: 0 on success, 1 on failure, 2 on a
// usage error.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) >= 2 && args[0] == "jwt" && args[1] == "inspect" {
		return inspect(ctx, args[2:], getenv, stdin, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "admin" {
		return admin(ctx, args[1:], getenv, stdin, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "drain" {
		d := authapid.Defaults()
		return drain.Command{OpsAddr: d.OpsAddr, Delay: d.DrainDelay, LogLevel: d.LogLevel}.Run(ctx, "authapi", args[1:], getenv, stdout, stderr)
	}
	c, err := authapid.Load(args, getenv, stdout)
	stderr = &lineWriter{w: stderr}
	return settings.Serve("authapi", stderr, err, c.Validate, c.LogLevel, func(log *slog.Logger) error {
		d, err := authapid.Assemble(c, authapid.Deps{Logger: log, Audit: auditLogger(stderr)})
		if err != nil {
			return err
		}
		return d.Run(ctx)
	})
}

// auditLogger writes the audit events (docs/audit.md) to the log stream,
// at Info whatever LOG_LEVEL says: a log pipeline routes them apart by
// their log=audit attribute.
func auditLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// lineWriter lets the main and the audit logger share one stream: each
// writes a whole line per Write, and lines never interleave.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
