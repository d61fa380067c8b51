package nodeproxyd

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/requestpath/egress"
)

// egressRunner is the egress listener, bound and ready to serve.
type egressRunner struct {
	proxy *egress.Proxy
	ln    net.Listener
}

// clientTimeouts are the node proxy's HEADER_TIMEOUT, KEEPALIVE_TIMEOUT and
// WRITE_TIMEOUT: the egress listener holds a sandbox to them as the other
// listeners hold a browser.
type clientTimeouts struct{ header, keepAlive, write time.Duration }

// newEgress builds the egress proxy on idx's caches and binds its
// listener; it returns nil when no provider is configured. Admitted calls
// count on act as their sandbox's activity.
func newEgress(e EgressConfig, t clientTimeouts, idx *informer.Index, act egress.Activity, namespace string, log *slog.Logger, reg prometheus.Registerer) (*egressRunner, error) {
	if !e.enabled() {
		return nil, nil
	}
	providers, _ := egress.ParseProviders([]byte(e.Providers)) // validated
	callers, err := idx.Callers()
	if err != nil {
		return nil, err
	}
	p, err := egress.New(egress.Options{
		Providers: providers, KeysDir: e.KeysDir, LimitsFile: e.LimitsFile,
		Default:      egress.Limits{RequestsPerMinute: e.RequestsPerMinute, TokensPerDay: int64(e.TokensPerDay)},
		MaxBodyBytes: e.MaxBodyKB << 10, MaxConnsPerClient: e.MaxConnsPerClient,
		HeaderTimeout: t.header, IdleTimeout: t.keepAlive, WriteTimeout: t.write,
		Callers: callers, Activity: act, Namespace: namespace, BusyMax: e.BusyMax,
		Logger: log, Audit: slog.New(infoAlways{log.Handler()}), Registerer: reg,
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", e.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", e.Addr, err)
	}
	return &egressRunner{proxy: p, ln: ln}, nil
}

func (r *egressRunner) serve(ctx context.Context, log *slog.Logger) error {
	log.Info("serving egress", "addr", r.ln.Addr().String())
	return r.proxy.Serve(ctx, r.ln)
}

// infoAlways writes audit lines at Info whatever LOG_LEVEL says, as the
// auth API does (docs/audit.md).
type infoAlways struct{ slog.Handler }

func (h infoAlways) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h infoAlways) WithAttrs(attrs []slog.Attr) slog.Handler {
	return infoAlways{h.Handler.WithAttrs(attrs)}
}

func (h infoAlways) WithGroup(name string) slog.Handler { return infoAlways{h.Handler.WithGroup(name)} }
