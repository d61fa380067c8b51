package nodeproxy

import (
	"context"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/sandgate/sandgate/internal/activity"
)

// Upstream kinds, for the access log.
const (
	upstreamPod     = "pod"
	upstreamPeer    = "peer"
	upstreamAuthAPI = "authapi"
)

// exchange is what the stages learn about one request. It holds copies,
// never the RequestCtx or its buffers, because a streamed response or a
// WebSocket outlives the handler.
type exchange struct {
	start  time.Time
	route  route
	method string
	peer   netip.Addr
	client netip.Addr // peer, or whom trusted proxies say they forward
	fwd    forwarded
	hopIn  bool
	ws     bool

	auth     string // authentication method
	renewed  bool
	upstream string // pod, peer or authapi
	pod      string
	node     string
	retried  bool // the app answered 401 once and the request was retried

	status   int
	bytesOut int64
	aborted  bool // the client went away before the response ended
	wsClose  int  // WebSocket close code sent to the client
	err      error

	slot bool // holds one of the user's in-flight slots
	held bool // waited for its sandbox to wake

	// act is the sandbox the Tracker counts this request against, when
	// tracked; upgraded once it became a WebSocket.
	act      activity.Key
	tracked  bool
	upgraded bool
	finished atomic.Bool
}

// finish releases the request's slot, counts it and writes its access log
// line. It runs once, when the response (or WebSocket) has ended.
func (p *Proxy) finish(x *exchange) {
	if !x.finished.CompareAndSwap(false, true) {
		return
	}
	if x.slot {
		p.inflight.release(x.route.user)
		p.m.inFlight.Dec()
	}
	if x.tracked {
		if x.upgraded {
			p.opts.Activity.EndWebSocket(x.act)
		} else {
			p.opts.Activity.End(x.act)
		}
	}
	elapsed := time.Since(x.start)
	route := x.route.kind.String()
	switch {
	case x.ws:
		route = routeWebSocket
	case x.hopIn:
		route = routeHopIn
	}
	p.m.observeRequest(x, elapsed)
	p.m.requests.WithLabelValues(route, codeClass(x.status)).Inc()

	attrs := make([]slog.Attr, 0, 16)
	attrs = append(attrs,
		slog.String("method", x.method),
		slog.String("route", route),
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
	p.access.LogAttrs(context.Background(), slog.LevelInfo, "request", attrs...)
}
