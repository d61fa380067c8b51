package settings

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Command is a sandgate command's main without the process: it runs until
// ctx ends and returns the exit code.
type Command func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int

// Main runs cmd as the process, with its arguments, environment, stdout
// and stderr; see Exit.
func Main(cmd Command) {
	Exit(func(ctx context.Context) int { return cmd(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr) })
}

// Exit runs run with a context that ends on SIGINT or SIGTERM, then exits
// the process with the code run returns.
func Exit(run func(ctx context.Context) int) {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	code := run(ctx)
	stop()
	os.Exit(code)
}
