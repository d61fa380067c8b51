package nodeproxy

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/openset"
)

// closeWait bounds the wait for the other side's answer to a close frame.
const closeWait = 3 * time.Second

// maxCloseText keeps a close frame within the 125-byte control payload.
const maxCloseText = 120

// dialUpstreamWS dials url with the browser's subprotocols, and its Host
// unless h names another.
func (fw *forwarder) dialUpstreamWS(ctx *fasthttp.RequestCtx, url string, h http.Header) (*websocket.Conn, *http.Response, error) {
	if h.Get("Host") == "" {
		h.Set("Host", string(ctx.Host()))
	}
	if v := ctx.Request.Header.Peek("Sec-WebSocket-Protocol"); len(v) > 0 {
		h.Set("Sec-WebSocket-Protocol", string(v))
	}
	start := time.Now()
	dctx, cancel := context.WithTimeout(context.Background(), fw.dialTimeout+fw.headerTimeout)
	defer cancel()
	conn, resp, err := fw.dialer.DialContext(dctx, url, h)
	fw.m.observe(stageUpstream, start)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	return conn, resp, err
}

// wsDialFailure describes a failed dial without quoting the response.
func wsDialFailure(err error) string {
	if errors.Is(err, websocket.ErrBadHandshake) {
		return "handshake refused"
	}
	return upstreamError(err).Error()
}

// upgradeAndBridge upgrades the client, answering with the upstream's
// subprotocol, and bridges it to conn until either side closes.
func (fw *forwarder) upgradeAndBridge(ctx *fasthttp.RequestCtx, x *exchange, conn *websocket.Conn) {
	fw.end.upgrade(ctx, x, conn.Subprotocol(), func(client *websocket.Conn) { fw.runBridge(x, client, conn) }, func() { conn.Close() })
}

// closeMessage formats a close frame payload within the control-frame
// limit.
func closeMessage(code int, text string) []byte {
	if len(text) > maxCloseText {
		text = text[:maxCloseText]
	}
	return websocket.FormatCloseMessage(code, text)
}

// bridge copies WebSocket messages between a client and an upstream in
// both directions: data messages streamed without buffering whole
// messages, pings and pongs forwarded, close codes passed through.
type bridge struct {
	fw       *forwarder
	x        *exchange
	client   *websocket.Conn
	upstream *websocket.Conn
	closing  atomic.Bool  // a close frame has been forwarded
	toClient atomic.Int32 // close code sent to the client

	// over is set, under life, before the connections are closed, so
	// shutdown does not touch them any more.
	life sync.Mutex
	over bool
}

// runBridge runs the bridge until both directions have ended.
func (fw *forwarder) runBridge(x *exchange, client, upstream *websocket.Conn) {
	b := &bridge{fw: fw, x: x, client: client, upstream: upstream}
	if !fw.sockets.Add(b) {
		client.WriteControl(websocket.CloseMessage, closeMessage(websocket.CloseGoingAway, "server shutting down"), time.Now().Add(closeWait))
		client.Close()
		upstream.Close()
		x.wsClose = websocket.CloseGoingAway
		fw.end.finish(x)
		return
	}
	fw.m.websockets.Inc()
	watch := fw.watch.session(x, watchWebSocket, b.sessionEnded)
	fw.activity.upgrade(x)
	client.SetReadLimit(fw.wsMaxMessageBytes)
	upstream.SetReadLimit(fw.wsMaxMessageBytes)
	b.forwardControl(client, upstream)
	b.forwardControl(upstream, client)
	var wg sync.WaitGroup
	wg.Go(func() { b.pump(client, upstream, true) })
	b.pump(upstream, client, false) // on this goroutine: one stack fewer per bridge
	wg.Wait()
	watch.stop()
	b.life.Lock()
	b.over = true
	b.life.Unlock()
	upstream.Close()
	client.Close()
	fw.m.websockets.Dec()
	x.wsClose = int(b.toClient.Load())
	fw.sockets.Remove(b)
	fw.end.finish(x)
}

// forwardControl passes src's pings and pongs on to dst and leaves close
// frames to the pump, which forwards them instead of answering itself.
func (b *bridge) forwardControl(src, dst *websocket.Conn) {
	src.SetPingHandler(func(data string) error {
		dst.WriteControl(websocket.PingMessage, []byte(data), time.Now().Add(b.fw.writeTimeout))
		return nil
	})
	src.SetPongHandler(func(data string) error {
		dst.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(b.fw.writeTimeout))
		return nil
	})
	src.SetCloseHandler(func(int, string) error { return nil })
}

// msgReader reads one message for the pump. It remembers why reading
// stopped, to tell it from a failed write, and gives dst a write deadline
// of WriteTimeout from each read: the message writer flushes a frame
// between two reads, so each frame, not the whole message, has
// WriteTimeout to pass.
type msgReader struct {
	r       io.Reader
	dst     *websocket.Conn
	timeout time.Duration
	err     error
}

func (r *msgReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		r.err = err
	}
	r.dst.SetWriteDeadline(time.Now().Add(r.timeout))
	return n, err
}

// pump copies messages from src to dst until src ends.
func (b *bridge) pump(src, dst *websocket.Conn, fromClient bool) {
	for {
		typ, r, err := src.NextReader()
		if err != nil {
			b.ended(dst, fromClient, err)
			return
		}
		b.fw.activity.traffic(b.x) // a data frame: pings and pongs never reach here
		w, err := dst.NextWriter(typ)
		if err != nil {
			b.kill()
			return
		}
		mr := &msgReader{r: r, dst: dst, timeout: b.fw.writeTimeout}
		_, cerr := io.Copy(w, mr)
		if mr.err != nil {
			// The message is cut short: the close goes out instead of its
			// final fragment, so dst never sees it as complete.
			b.ended(dst, fromClient, mr.err)
			return
		}
		if cerr != nil || w.Close() != nil {
			b.kill()
			return
		}
	}
}

// ended handles the end of one direction: src sent a close frame, sent too
// large a message, or broke. The matching close goes to dst; the first
// close of the bridge gives dst closeWait to answer.
func (b *bridge) ended(dst *websocket.Conn, fromClient bool, err error) {
	code, text := websocket.CloseInternalServerErr, "upstream failed"
	if fromClient {
		code, text = websocket.CloseGoingAway, "client went away"
	}
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ce) && ce.Code != websocket.CloseAbnormalClosure && ce.Code != websocket.CloseTLSHandshake:
		code, text = ce.Code, ce.Text
	case errors.Is(err, websocket.ErrReadLimit):
		code, text = websocket.CloseMessageTooBig, "message too big"
	}
	first := b.closing.CompareAndSwap(false, true)
	if !fromClient {
		b.toClient.CompareAndSwap(0, int32(code))
	}
	payload := closeMessage(code, text)
	if code == websocket.CloseNoStatusReceived {
		payload = nil
	}
	dst.WriteControl(websocket.CloseMessage, payload, time.Now().Add(closeWait))
	if first {
		dst.SetReadDeadline(time.Now().Add(closeWait))
	}
}

// kill drops both connections at once, ending both pumps, unless the
// bridge has ended meanwhile.
func (b *bridge) kill() {
	b.end(func() {
		ownConn(b.client).Close()
		b.upstream.NetConn().Close()
	})
}

// end runs shut once the bridge is closing, unless it has ended
// meanwhile.
func (b *bridge) end(shut func()) {
	b.life.Lock()
	defer b.life.Unlock()
	if b.over {
		return
	}
	b.closing.Store(true)
	shut()
}

// ownConn is c's network connection: the one under what bareConn read
// early, and under TLS, whose Close could wait to write its alert to a
// client that does not read.
func ownConn(c *websocket.Conn) net.Conn {
	nc := c.NetConn()
	if u, ok := nc.(interface{ UnsafeConn() net.Conn }); ok {
		nc = u.UnsafeConn()
	}
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	return nc
}

// goingAway closes both sides with 1001, for shutdown, unless the bridge
// has ended meanwhile.
func (b *bridge) goingAway() {
	b.closeWith(websocket.CloseGoingAway, "server shutting down", "server shutting down")
}

// sessionEnded closes the client's side with 4401 and the upstream's with
// 1001, as goingAway does, once the session the socket was opened with
// has ended, unless the bridge has ended meanwhile.
func (b *bridge) sessionEnded() {
	b.closeWith(closeUnauthenticated, "session ended, sign in again", "session ended")
}

// closeWith sends the client a close frame with code and clientText, the
// upstream one with 1001 and upstreamText, and gives both closeWait to
// answer, unless the bridge has ended meanwhile.
func (b *bridge) closeWith(code int, clientText, upstreamText string) {
	b.end(func() {
		b.toClient.CompareAndSwap(0, int32(code))
		deadline := time.Now().Add(closeWait)
		b.client.WriteControl(websocket.CloseMessage, closeMessage(code, clientText), deadline)
		b.upstream.WriteControl(websocket.CloseMessage, closeMessage(websocket.CloseGoingAway, upstreamText), deadline)
		b.client.SetReadDeadline(deadline)
		b.upstream.SetReadDeadline(deadline)
	})
}

// wsRegistry tracks open bridges so shutdown can close them with 1001 and
// wait for them.
type wsRegistry struct {
	openset.Set[*bridge]
	closing sync.WaitGroup // goingAway calls under way
}

// closeAll refuses new bridges and starts sending 1001 to both sides of
// every open one. The bridges close at once, each on its own: a client
// that does not read holds up only its own close, for up to closeWait.
func (r *wsRegistry) closeAll() {
	for _, b := range r.Close() {
		r.closing.Go(b.goingAway)
	}
}

// wait returns once every bridge has ended, killing those left when ctx
// ends, and the closes closeAll started are done.
func (r *wsRegistry) wait(ctx context.Context) {
	r.Drain(ctx, (*bridge).kill)
	r.closing.Wait()
}
