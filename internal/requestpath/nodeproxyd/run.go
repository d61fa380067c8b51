package nodeproxyd

import (
	"context"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sandgate/sandgate/internal/httpserve"
)

// finalReportTimeout bounds the activity report sent after the drain; the
// DaemonSet's grace period has room for it.
const finalReportTimeout = 3 * time.Second

// Run serves until ctx ends, then drains: the informers, the JWKS fetcher,
// the activity reporter, the egress proxy and the ops server start at
// once; the proxy starts serving once the informers have synced and the
// JWKS has loaded (or SYNC_TIMEOUT passed). After the drain one more
// activity report carries the requests that ended during it. Call it once;
// it releases everything Assemble acquired when it returns.
func (d *Daemon) Run(ctx context.Context) error {
	defer d.Close()
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return d.idx.Run(ctx) })
	if d.egress != nil {
		g.Go(func() error { return d.egress.serve(ctx, d.log) })
	}
	g.Go(func() error { return d.fetcher.Start(ctx) })
	g.Go(func() error { return d.reporter.Run(ctx) })
	g.Go(func() error { return httpserve.Serve(ctx, d.ops, d.opsLn, 5*time.Second) })
	g.Go(func() error {
		d.waitReady(ctx)
		for _, l := range d.lns {
			d.log.Info("serving", "addr", l.Addr().String(), "tls", l.TLS != nil, "node", d.cfg.NodeName)
		}
		err := d.proxy.ServeAll(ctx, d.lns...)
		d.finalReport(ctx)
		return err
	})
	return g.Wait()
}

// finalReport sends the activity table once more after the last request
// ended, so the idle sweeper does not miss the requests of the drain.
func (d *Daemon) finalReport(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalReportTimeout)
	defer cancel()
	if err := d.reporter.Send(ctx); err != nil && ctx.Err() != nil {
		d.log.Warn("final activity report not delivered", "err", err)
	}
}

// waitReady holds the start of serving until the caches are warm, so the
// first requests are not refused for want of an account, but never longer
// than SYNC_TIMEOUT.
func (d *Daemon) waitReady(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.SyncTimeout)
	defer cancel()
	if err := d.idx.WaitForSync(ctx); err != nil {
		d.log.Warn("serving before the informers synced", "err", err)
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for !d.fetcher.Ready() {
		select {
		case <-ctx.Done():
			d.log.Warn("serving before the JWKS loaded")
			return
		case <-t.C:
		}
	}
}
