package authapid

import (
	"context"
	"errors"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/sandgate/sandgate/internal/httpserve"
)

// Run serves until ctx ends, then shuts down gracefully: listeners stop
// accepting, a signup or recreate waiting for its sandbox answers that it
// still wakes, and requests in flight get SHUTDOWN_TIMEOUT to finish. The
// claim and key informers stop only after the listeners have drained, as
// those requests wait on their events. Call Run once; it closes the
// listeners when it returns.
func (d *Daemon) Run(ctx context.Context) error {
	defer d.Close()
	g, gctx := errgroup.WithContext(ctx)
	caches, stopCaches := context.WithCancel(context.WithoutCancel(gctx))
	defer stopCaches()
	var serving sync.WaitGroup
	for _, s := range d.servers {
		d.log.Info("listening", "addr", s.ln.Addr().String())
		serving.Add(1)
		g.Go(func() error {
			defer serving.Done()
			return httpserve.Serve(gctx, s.srv, s.ln, d.cfg.ShutdownTimeout)
		})
	}
	if !d.sweepApart {
		g.Go(func() error { return d.sweeper.Run(gctx) })
	}
	g.Go(func() error { return d.srv.Run(caches) })
	g.Go(func() error {
		<-gctx.Done()
		d.log.Info("shutting down", "timeout_ms", d.cfg.ShutdownTimeout.Milliseconds())
		d.srv.ShuttingDown()
		serving.Wait()
		stopCaches()
		return nil
	})
	err := g.Wait()
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}
