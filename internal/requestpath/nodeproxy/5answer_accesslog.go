package nodeproxy

import (
	"context"
	"log/slog"
	"time"
)

// logAccess writes a finished request's access-log line.
func (a *answers) logAccess(x *exchange, elapsed time.Duration) {
	attrs := make([]slog.Attr, 0, 16)
	attrs = append(attrs,
		slog.String("method", x.method),
		slog.String("route", x.routeLabel()),
		slog.String("path", x.route.path),
		slog.Int("status", x.status),
		slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000),
		slog.Int64("bytes_out", x.bytesOut),
		slog.String("client", x.client.String()),
	)
	if x.client != x.peer {
		attrs = append(attrs, slog.String("peer", x.peer.String()))
	}
	if x.route.user != "" {
		attrs = append(attrs, slog.String("user", x.route.user))
	}
	if x.auth != "" {
		attrs = append(attrs, slog.String("auth", x.auth))
	}
	if x.renewed {
		attrs = append(attrs, slog.Bool("renewed", true))
	}
	if x.upstream != "" {
		attrs = append(attrs, slog.String("upstream", x.upstream))
	}
	if x.pod != "" {
		attrs = append(attrs, slog.String("pod", x.pod))
	}
	if x.node != "" {
		attrs = append(attrs, slog.String("node", x.node))
	}
	if x.held {
		attrs = append(attrs, slog.Bool("held_for_wake", true))
	}
	if x.retried {
		attrs = append(attrs, slog.Bool("retried_401", true))
	}
	if x.aborted {
		attrs = append(attrs, slog.Bool("client_aborted", true))
	}
	if x.wsClose != 0 {
		attrs = append(attrs, slog.Int("ws_close", x.wsClose))
	}
	if x.err != nil {
		// Errors are built by sandgate and never hold a token or cookie.
		attrs = append(attrs, slog.String("err", x.err.Error()))
	}
	a.access.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
}

// logUnparsed writes the access-log line of a request fasthttp could not
// parse: nothing of it but its peer is known.
func (a *answers) logUnparsed(status int, client string) {
	a.access.Info("request", "status", status, "route", routeUnparsed, "client", client, "err", "malformed request")
}
