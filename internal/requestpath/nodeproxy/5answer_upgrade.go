package nodeproxy

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"
)

// upgrade answers a WebSocket handshake and, once the client has its 101,
// runs run with the client's socket on a goroutine of its own. A handshake
// the checks refuse gets their HTTP error and upgrade reports false.
//
// fasthttp hands a hijacked connection over together with the read buffer
// it parsed the request with (MAX_HEADER_KB, 16 KiB by default), and keeps
// it for as long as the hijack handler runs. So the 101 is not fasthttp's:
// the handler takes the bare connection from under fasthttp's (with any
// bytes the client sent early), writes the 101 there and returns, and the
// buffer goes with it (the server keeps hijacked connections: the socket's
// own code closes them). If the client is gone before the handler runs, a
// timer cleans up with abandon and finishes the request, so its slot is
// released.
func (a *answers) upgrade(ctx *fasthttp.RequestCtx, x *exchange, subprotocol string, run func(*websocket.Conn), abandon func()) bool {
	conn := clientConnOf(ctx)
	if conn != nil {
		conn.upgraded.Store(true)
	}
	var claimed atomic.Bool
	end := func(status int, aborted bool) {
		if abandon != nil {
			abandon()
		}
		x.status, x.aborted = status, aborted
		a.finish(x)
	}
	guard := time.AfterFunc(a.upgradeTimeout, func() {
		if claimed.CompareAndSwap(false, true) {
			end(x.status, true)
		}
	})
	hs, err := a.checkHandshake(ctx)
	if err != nil {
		guard.Stop()
		if conn != nil {
			conn.upgraded.Store(false)
		}
		end(ctx.Response.StatusCode(), false)
		return false
	}
	hs.subprotocol = subprotocol
	ctx.HijackSetNoResponse(true)
	ctx.Hijack(func(c net.Conn) {
		if !claimed.CompareAndSwap(false, true) {
			c.Close()
			return
		}
		guard.Stop()
		ws, err := a.handshake(c, hs)
		if err != nil {
			c.Close()
			end(x.status, true)
			return
		}
		x.status = fasthttp.StatusSwitchingProtocols
		go run(ws)
	})
	return true
}

// handshakeRequest is what the 101 is made of, copied out of the request
// before fasthttp reuses it.
type handshakeRequest struct {
	key, version, subprotocol string
	// setCookies are the response's cookies (a renewed session's).
	setCookies []string
}

// checkHandshake applies the library's checks to ctx's handshake and
// answers one they refuse with its HTTP error; the key must also be one
// the 101 can answer (16 bytes in base64). The 101 the library then puts
// on ctx's response is never written (upgrade).
func (a *answers) checkHandshake(ctx *fasthttp.RequestCtx) (handshakeRequest, error) {
	if err := a.upgrader.Upgrade(ctx, func(*websocket.Conn) {}); err != nil {
		return handshakeRequest{}, err
	}
	hs := handshakeRequest{
		key:     string(ctx.Request.Header.Peek("Sec-WebSocket-Key")),
		version: string(ctx.Request.Header.Peek("Sec-WebSocket-Version")),
	}
	if k, err := base64.StdEncoding.DecodeString(hs.key); err != nil || len(k) != 16 {
		ctx.Hijack(nil) // the library's, which would take the connection after the error
		ctx.Error("websocket: not a websocket handshake: 'Sec-WebSocket-Key' header must be Base64 encoded value of 16-byte in length", fasthttp.StatusBadRequest)
		return handshakeRequest{}, errors.New("bad WebSocket key")
	}
	ctx.Response.Header.VisitAllCookie(func(_, v []byte) { hs.setCookies = append(hs.setCookies, string(v)) })
	return hs, nil
}

// earlyBytesMax bounds what a client may send before it has the 101.
const earlyBytesMax = 4 << 10

// handshake writes the 101 for hs on the bare connection under c, and
// returns the client's socket on it.
func (a *answers) handshake(c net.Conn, hs handshakeRequest) (*websocket.Conn, error) {
	bare, err := bareConn(c)
	if err != nil {
		return nil, err
	}
	req := &http.Request{Method: http.MethodGet, Header: http.Header{
		"Connection":            {"Upgrade"},
		"Upgrade":               {"websocket"},
		"Sec-Websocket-Version": {hs.version},
		"Sec-Websocket-Key":     {hs.key},
	}}
	header := http.Header{}
	if hs.subprotocol != "" {
		header["Sec-Websocket-Protocol"] = []string{hs.subprotocol}
	}
	if len(hs.setCookies) > 0 {
		header["Set-Cookie"] = hs.setCookies
	}
	u := websocket.Upgrader{
		HandshakeTimeout: a.upgradeTimeout,
		ReadBufferSize:   wsReadBuffer,
		WriteBufferSize:  4 << 10,
		WriteBufferPool:  wsWriteBuffers,
		CheckOrigin:      func(*http.Request) bool { return true },
	}
	return u.Upgrade(hijacked{bare}, req, header)
}

// bareConn is the connection under fasthttp's hijacked c, reading first
// what fasthttp had read ahead of the request's end. It is found by
// reading c with a deadline already passed: what fasthttp buffered comes
// at once, then the deadline ends the read.
func bareConn(c net.Conn) (net.Conn, error) {
	u, ok := c.(interface{ UnsafeConn() net.Conn })
	if !ok {
		return c, nil
	}
	bare := u.UnsafeConn()
	if err := bare.SetReadDeadline(time.Unix(1, 0)); err != nil {
		return nil, fmt.Errorf("read ahead: %w", err)
	}
	var early []byte
	p := make([]byte, 512)
	for {
		n, err := c.Read(p)
		early = append(early, p[:n]...)
		var ne net.Error
		switch {
		case len(early) > earlyBytesMax:
			return nil, errors.New("read ahead: too much sent before the handshake's answer")
		case errors.As(err, &ne) && ne.Timeout():
		case err != nil:
			return nil, fmt.Errorf("read ahead: %w", err)
		default:
			continue
		}
		break
	}
	if err := bare.SetReadDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("read ahead: %w", err)
	}
	if len(early) == 0 {
		return bare, nil
	}
	return &earlyConn{Conn: bare, early: early}, nil
}

// earlyConn reads early before its connection.
type earlyConn struct {
	net.Conn
	early []byte
}

func (c *earlyConn) Read(p []byte) (int, error) {
	if len(c.early) > 0 {
		n := copy(p, c.early)
		c.early = c.early[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// UnsafeConn is the connection under c, for ownConn.
func (c *earlyConn) UnsafeConn() net.Conn { return c.Conn }

// hijacked is a bare connection as the http.ResponseWriter the library's
// net/http upgrader writes its 101 through.
type hijacked struct{ conn net.Conn }

func (h hijacked) Header() http.Header         { return http.Header{} }
func (h hijacked) Write(p []byte) (int, error) { return len(p), nil }
func (h hijacked) WriteHeader(int)             {}

// Hijack hands over the connection with empty buffers: nothing is read
// ahead of the handshake any more, and the 101 is written at once.
func (h hijacked) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return h.conn, bufio.NewReadWriter(bufio.NewReaderSize(h.conn, 16), bufio.NewWriterSize(h.conn, 256)), nil
}
