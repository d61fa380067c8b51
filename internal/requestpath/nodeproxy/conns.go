package nodeproxy

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/connlimit"
	"github.com/sandgate/sandgate/internal/deadlineconn"
	"github.com/sandgate/sandgate/internal/openset"
)

// listener tracks the client connections it accepts so shutdown can close
// what is still open after draining, and gives each Write its own deadline:
// a client that stops reading is dropped after writeTimeout without
// cutting off a long stream that keeps moving. With limit set, a client
// address over its share of connections is closed on accept.
type listener struct {
	net.Listener
	writeTimeout time.Duration
	limit        *connlimit.Limit

	conns openset.Set[*clientConn]
}

func newListener(ln net.Listener, writeTimeout time.Duration) *listener {
	return &listener{Listener: ln, writeTimeout: writeTimeout}
}

// Accept wraps the next connection within the limit.
func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		cc := &clientConn{Conn: c, l: l}
		if l.limit != nil {
			var ok bool
			if cc.key, cc.counted, ok = l.limit.Acquire(c.RemoteAddr()); !ok {
				c.Close()
				continue
			}
		}
		if !l.conns.Add(cc) {
			if cc.counted {
				l.limit.Release(cc.key)
			}
			c.Close()
			return nil, net.ErrClosed
		}
		return cc, nil
	}
}

// closeAll takes no more connections and closes every one still open but
// those upgraded to WebSockets: their own goroutines close them once the
// 1001 that shutdown, a refused bridge or a refused handshake sends is
// written. Closing one here could cut that 1001 off.
func (l *listener) closeAll() {
	for _, c := range l.conns.Close() {
		if !c.upgraded.Load() {
			c.Close()
		}
	}
}

// wait returns once every connection is closed, closing those left, the
// upgraded ones too, when ctx ends.
func (l *listener) wait(ctx context.Context) {
	l.conns.Drain(ctx, func(c *clientConn) { c.Close() })
}

type clientConn struct {
	net.Conn
	l       *listener
	key     netip.Prefix // the client's bucket in l.limit
	counted bool         // whether l.limit counts this connection
	once    sync.Once
	linger  atomic.Bool // the client may still be sending a body we refused
	// upgraded is set while the handler answers a WebSocket upgrade, so
	// before fasthttp's shutdown can count the connection as gone.
	upgraded atomic.Bool
	write    deadlineconn.Deadline
}

// Lingering close: how long and how much of a refused body is read and
// dropped after the answer, so the client reads the answer instead of a
// connection reset.
const (
	lingerTime  = time.Second
	lingerBytes = 4 << 20
)

func (c *clientConn) Write(b []byte) (int, error) {
	if c.l.writeTimeout > 0 {
		c.write.Extend(c.Conn.SetWriteDeadline, c.l.writeTimeout)
	}
	return c.Conn.Write(b)
}

// ReadFrom sends a streamed body in writes of up to streamChunk bytes,
// each through Write (so each extends the write deadline): the server's
// 16 KiB buffered writer hands a large body here once it is empty, as it
// would to a bare TCP connection, instead of cutting it into buffer-sized
// writes.
func (c *clientConn) ReadFrom(r io.Reader) (int64, error) {
	buf := streamChunks.Get().(*[]byte)
	defer streamChunks.Put(buf)
	return io.CopyBuffer(writeOnly{c}, r, *buf)
}

// streamChunk is the largest write of a streamed body to a client, and of
// the reads that fill it: io.Copy's size, as a bare TCP connection uses.
const streamChunk = 32 << 10

var streamChunks = sync.Pool{New: func() any { b := make([]byte, streamChunk); return &b }}

// writeOnly hides a writer's ReadFrom from io.CopyBuffer, which would
// otherwise call it again.
type writeOnly struct{ io.Writer }

func (c *clientConn) Close() error {
	first := false
	c.once.Do(func() {
		first = true
		c.l.conns.Remove(c)
		if c.counted {
			c.l.limit.Release(c.key)
		}
	})
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok && first && c.linger.Load() {
		go func() {
			cw.CloseWrite()
			c.Conn.SetReadDeadline(time.Now().Add(lingerTime))
			io.CopyN(io.Discard, c.Conn, lingerBytes)
			c.Conn.Close()
		}()
		return nil
	}
	return c.Conn.Close()
}

// closeAfterAnswer makes the connection close once the answer is written,
// lingering if the client may still be sending a body: closing a socket
// with unread data sends a reset that can destroy the answer in flight.
func closeAfterAnswer(ctx *fasthttp.RequestCtx) {
	ctx.SetConnectionClose()
	if hasBody(&ctx.Request.Header) {
		if c := clientConnOf(ctx); c != nil {
			c.linger.Store(true)
		}
	}
}

// hasBody reports whether a request declares a body: a positive
// Content-Length, or chunked (-1). fasthttp gives -2 for neither.
func hasBody(h *fasthttp.RequestHeader) bool {
	cl := h.ContentLength()
	return cl > 0 || cl == -1
}

// clientConnOf is the tracked connection ctx arrived on, or nil when it
// came on one the proxy does not track.
func clientConnOf(ctx *fasthttp.RequestCtx) *clientConn {
	conn := ctx.Conn()
	if tc, ok := conn.(*tls.Conn); ok {
		conn = tc.NetConn()
	}
	c, _ := conn.(*clientConn)
	return c
}
