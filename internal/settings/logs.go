package settings

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/klog/v2"
)

// clientGoLog is the logger that client-go's lines (klog) go to, as
// component=client-go; nil drops them. klog's own logger may be set only
// before anything logs through it, so it is set once per process, to a
// handler that reads this on every line.
var (
	clientGoLog   atomic.Pointer[slog.Logger]
	routeKlogOnce sync.Once
)

// running are the loggers of the Serves under way, oldest first (one in a
// binary; the binaries' tests run several), and outer is slog's default
// from before the first of them.
var running struct {
	sync.Mutex
	logs  []*slog.Logger
	outer *slog.Logger
}

// oneLogFormat sends every other logger in the process through log until
// restore is called, so stderr carries only its JSON lines: client-go's
// own (klog: leader election, watch and list errors, as
// component=client-go) and anything written with the standard log package.
// With several under way the newest one wins, and when one ends the
// newest of the others takes over.
func oneLogFormat(log *slog.Logger) (restore func()) {
	routeKlogOnce.Do(func() { klog.SetSlogLogger(slog.New(currentClientGo{})) })
	running.Lock()
	defer running.Unlock()
	if len(running.logs) == 0 {
		running.outer = slog.Default()
	}
	running.logs = append(running.logs, log)
	routeToNewest()
	return func() {
		running.Lock()
		defer running.Unlock()
		if i := slices.Index(running.logs, log); i >= 0 {
			running.logs = slices.Delete(running.logs, i, i+1)
		}
		routeToNewest()
	}
}

// routeToNewest points client-go and slog's default at the newest running
// logger; with none, client-go's lines are dropped and slog's default is
// what it was before. The caller holds running.
func routeToNewest() {
	n := len(running.logs)
	if n == 0 {
		clientGoLog.Store(nil)
		slog.SetDefault(running.outer)
		return
	}
	clientGoLog.Store(running.logs[n-1].With("component", "client-go"))
	slog.SetDefault(running.logs[n-1])
}

// currentClientGo is a slog.Handler that passes each record to the handler
// of clientGoLog as it is at that moment, with the attributes and groups
// added on the way.
type currentClientGo struct {
	with []func(slog.Handler) slog.Handler
}

func (c currentClientGo) target() slog.Handler {
	log := clientGoLog.Load()
	if log == nil {
		return nil
	}
	h := log.Handler()
	for _, w := range c.with {
		h = w(h)
	}
	return h
}

func (c currentClientGo) Enabled(ctx context.Context, l slog.Level) bool {
	h := c.target()
	return h != nil && h.Enabled(ctx, l)
}

func (c currentClientGo) Handle(ctx context.Context, r slog.Record) error {
	if h := c.target(); h != nil {
		return h.Handle(ctx, r)
	}
	return nil
}

func (c currentClientGo) WithAttrs(as []slog.Attr) slog.Handler {
	return currentClientGo{with: append(slices.Clip(c.with), func(h slog.Handler) slog.Handler { return h.WithAttrs(as) })}
}

func (c currentClientGo) WithGroup(name string) slog.Handler {
	return currentClientGo{with: append(slices.Clip(c.with), func(h slog.Handler) slog.Handler { return h.WithGroup(name) })}
}
