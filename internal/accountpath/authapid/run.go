package authapid

import (
	"context"
	"errors"

	"golang.org/x/sync/errgroup"

	"github.com/sandgate/sandgate/internal/httpserve"
)

// Run serves until ctx ends, then shuts down gracefully: readiness drops,
// listeners stop accepting, requests in flight get SHUTDOWN_TIMEOUT to
// finish. Call it once; it closes the listeners when it returns.
func (d *Daemon) Run(ctx context.Context) error {
	defer d.Close()
	g, gctx := errgroup.WithContext(ctx)
	for _, s := range d.servers {
		d.log.Info("listening", "addr", s.ln.Addr().String())
		g.Go(func() error { return httpserve.Serve(gctx, s.srv, s.ln, d.cfg.ShutdownTimeout) })
	}
	if !d.sweepApart {
		g.Go(func() error { return d.sweeper.Run(gctx) })
	}
	g.Go(func() error { return d.srv.Run(gctx) })
	g.Go(func() error {
		<-gctx.Done()
		d.log.Info("shutting down", "timeout_ms", d.cfg.ShutdownTimeout.Milliseconds())
		return nil
	})
	err := g.Wait()
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}
