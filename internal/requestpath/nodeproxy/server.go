package nodeproxy

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"time"

	"github.com/valyala/fasthttp"
)

// newServer builds the fasthttp server with the limits against slow or
// hostile clients.
func (p *Proxy) newServer() *fasthttp.Server {
	o := p.opts
	return &fasthttp.Server{
		Handler:               p.serve,
		ErrorHandler:          p.serveError,
		NoDefaultServerHeader: true,
		NoDefaultDate:         true,
		NoDefaultContentType:  true,
		ReadTimeout:           o.HeaderTimeout,
		IdleTimeout:           o.IdleTimeout,
		ReadBufferSize:        o.MaxHeaderBytes,
		WriteBufferSize:       16 << 10,
		// Streamed bodies: the handler runs once the headers and at most
		// one body byte are in, so it decides how much to buffer and sees
		// an aborted upload itself.
		StreamRequestBody:            true,
		MaxRequestBodySize:           1,
		DisablePreParseMultipartForm: true,
		HeaderReceived: func(*fasthttp.RequestHeader) fasthttp.RequestConfig {
			return fasthttp.RequestConfig{ReadTimeout: o.BodyTimeout}
		},
		// A client that asks before sending its body learns about the
		// limit without sending it.
		ExpectHandler:   p.expect,
		CloseOnShutdown: true,
		// A WebSocket's own code closes its connection (upgrade).
		KeepHijackedConns:     true,
		SecureErrorLogMessage: true,
		TCPKeepalive:          true,
		Logger:                fasthttpLogger{p.log},
		// The worker pool's cleaner notices a stopped server only after
		// this long.
		MaxIdleWorkerDuration: time.Second,
	}
}

// Listener is a socket the proxy serves: plain HTTP, or HTTPS when TLS is
// set.
type Listener struct {
	net.Listener
	// TLS, when set, terminates TLS on every accepted connection, which
	// then counts as https (X-Forwarded-Proto). It needs Certificates or
	// GetCertificate; versions below TLS 1.2 are never offered.
	TLS *tls.Config
}

// Serve serves on ln until ctx ends, then shuts down gracefully: /readyz
// fails, WebSockets get close 1001, event streams end (clients reconnect),
// other requests drain for up to DrainTimeout, and whatever is still open
// then is closed. It closes ln and returns nil after a clean shutdown, once
// every connection it accepted is closed: a 1001 still being written to a
// WebSocket refused as the shutdown began is not cut off.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	return p.ServeAll(ctx, Listener{Listener: ln})
}

// ServeAll is Serve on several listeners at once, with one shutdown that
// drains them all; a listener that fails stops the others too. Call Serve
// or ServeAll once per Proxy: shutdown ends every WebSocket and stream the
// proxy holds.
func (p *Proxy) ServeAll(ctx context.Context, lns ...Listener) error {
	if len(lns) == 0 {
		return errors.New("serve: no listener")
	}
	srv := p.newServer()
	tracked := make([]*listener, len(lns))
	served := make(chan error, len(lns))
	for i, l := range lns {
		tracked[i] = newClientListener(l.Listener, p.opts.WriteTimeout, p.net)
		// TLS goes outside the tracking listener, so every encrypted
		// byte still gets the write deadline and fasthttp sees the
		// *tls.Conn that makes ctx.IsTLS() true.
		var ln net.Listener = tracked[i]
		if l.TLS != nil {
			ln = tls.NewListener(ln, serverTLS(l.TLS))
		}
		go func() { served <- srv.Serve(ln) }()
	}
	if p.successes != nil {
		summaryCtx, stopSummary := context.WithCancel(context.WithoutCancel(ctx))
		summarised := make(chan struct{})
		go func() {
			defer close(summarised)
			p.successes.run(summaryCtx, p.access, p.opts.AccessLogSummary)
		}()
		defer func() { stopSummary(); <-summarised }()
	}
	pending := len(lns)
	var failed error
	select {
	case err := <-served:
		pending--
		failed = fmt.Errorf("serve: %w", cmp.Or(err, net.ErrClosed))
		p.log.Error("a listener stopped; shutting down", "err", failed)
	case <-ctx.Done():
	}
	p.shutdown(ctx, srv, tracked)
	for ; pending > 0; pending-- {
		<-served
	}
	p.client.CloseIdleConnections()
	return failed
}

// serverTLS is c for a client-facing listener: at least TLS 1.2, and
// HTTP/1.1 as the only application protocol fasthttp speaks.
func serverTLS(c *tls.Config) *tls.Config {
	c = c.Clone()
	c.MinVersion = max(c.MinVersion, tls.VersionTLS12)
	if len(c.NextProtos) == 0 {
		c.NextProtos = []string{"http/1.1"}
	}
	return c
}

// shutdown drains srv and closes what is left on its listeners.
func (p *Proxy) shutdown(ctx context.Context, srv *fasthttp.Server, lns []*listener) {
	p.draining.Store(true)
	p.log.Info("shutting down", "websockets", p.sockets.Len(), "streams", p.streams.Len())
	drain, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.opts.DrainTimeout)
	defer cancel()
	p.sockets.closeAll()
	p.streams.closeAll(true)
	// Past the deadline ShutdownWithContext leaves the rest running;
	// any other error is from closing a listener that already failed.
	late := srv.ShutdownWithContext(drain) != nil && drain.Err() != nil
	if late {
		p.log.Warn("drain deadline passed; closing what is left")
	}
	p.streams.closeAll(false)
	for _, l := range lns {
		// fasthttp closed the listeners it knew of; this also stops one
		// whose Serve had not begun when ctx ended.
		l.Close()
		l.closeAll()
	}
	p.sockets.wait(drain)
	for _, l := range lns {
		l.wait(drain)
	}
	if late {
		srv.ShutdownWithContext(context.Background())
	}
}

// fasthttpLogger sends fasthttp's own messages to slog at Debug: they are
// about broken clients, and may quote their bytes.
type fasthttpLogger struct{ log *slog.Logger }

func (l fasthttpLogger) Printf(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug("fasthttp", "msg", fmt.Sprintf(format, args...))
	}
}

// peerAddr is the direct peer's IP address.
func peerAddr(ctx *fasthttp.RequestCtx) netip.Addr {
	if a, ok := ctx.RemoteAddr().(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			return ip.Unmap()
		}
	}
	return netip.IPv4Unspecified()
}

// Draining reports whether shutdown has begun.
func (p *Proxy) Draining() bool { return p.draining.Load() }
