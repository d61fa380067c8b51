package agentapp

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/sandgate/sandgate/internal/openset"
)

const (
	// wsMaxMessage caps a message read from or generated for a client.
	wsMaxMessage = 64 << 20
	// wsWriteTimeout bounds one write to a slow client.
	wsWriteTimeout = 10 * time.Second
	// wsCloseWait is how long the server waits for the client to answer its
	// close frame before dropping the connection.
	wsCloseWait = 2 * time.Second
)

// serveWebSocket upgrades /api/ws and runs its read loop:
//
//   - text and binary messages come back unchanged;
//   - the text "close:<code>" makes the server close with that code;
//   - the text "big:<n>" makes the server send one binary message of n bytes,
//     byte i being 'a' + i%26;
//   - every TickInterval the server pushes the text "tick <n>".
//
// A bad close code or size is answered with a text message starting "error:".
// On shutdown the server closes the socket with 1001 (going away).
func (a *App) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	c, err := a.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered the request
	}
	conn := &wsConn{c: c, done: make(chan struct{})}
	if !a.sockets.Add(conn) {
		conn.goingAway()
		c.Close()
		return
	}
	defer a.sockets.Remove(conn)
	defer c.Close()
	c.SetReadLimit(wsMaxMessage)

	var ticks sync.WaitGroup
	if every := a.opts.TickInterval; every > 0 {
		ticks.Go(func() { conn.tick(every) })
	}
	defer ticks.Wait()
	defer close(conn.done)

	for {
		typ, msg, err := c.ReadMessage()
		if err != nil {
			return // closed by either side, or broken
		}
		if err := conn.handle(typ, msg); err != nil {
			return
		}
	}
}

// wsConn is one server-side WebSocket. The library allows one writer at a
// time, so data writes (echo, big, ticks) share wmu; close frames go through
// WriteControl, which may run concurrently with them.
type wsConn struct {
	c    *websocket.Conn
	wmu  sync.Mutex
	done chan struct{} // closed when the read loop ends
}

func (w *wsConn) write(typ int, data []byte) error {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.c.SetWriteDeadline(time.Now().Add(wsWriteTimeout))
	return w.c.WriteMessage(typ, data)
}

// closeWith sends a close frame and gives the client wsCloseWait to answer
// before the read loop gives up.
func (w *wsConn) closeWith(code int, reason string) {
	msg := websocket.FormatCloseMessage(code, reason)
	w.c.WriteControl(websocket.CloseMessage, msg, time.Now().Add(wsWriteTimeout))
	// The net.Conn deadline is safe to set while the read loop is reading.
	w.c.NetConn().SetReadDeadline(time.Now().Add(wsCloseWait))
}

func (w *wsConn) goingAway() { w.closeWith(websocket.CloseGoingAway, "server shutting down") }

func (w *wsConn) handle(typ int, msg []byte) error {
	if typ == websocket.TextMessage {
		s := string(msg)
		if arg, ok := strings.CutPrefix(s, "close:"); ok {
			code, err := strconv.Atoi(arg)
			if err != nil || !sendableCloseCode(code) {
				return w.write(websocket.TextMessage, []byte("error: invalid close code "+strconv.Quote(arg)))
			}
			w.closeWith(code, "requested by client")
			return nil // the read loop ends on the client's answer
		}
		if arg, ok := strings.CutPrefix(s, "big:"); ok {
			n, err := strconv.Atoi(arg)
			if err != nil || n < 0 || n > wsMaxMessage {
				return w.write(websocket.TextMessage, []byte("error: invalid size "+strconv.Quote(arg)))
			}
			return w.write(websocket.BinaryMessage, bigMessage(n))
		}
	}
	return w.write(typ, msg)
}

func (w *wsConn) tick(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-w.done:
			return
		case <-t.C:
		}
		if err := w.write(websocket.TextMessage, fmt.Appendf(nil, "tick %d", n)); err != nil {
			return
		}
	}
}

// sendableCloseCode reports whether code may appear in a close frame
// (RFC 6455 section 7.4).
func sendableCloseCode(code int) bool {
	switch {
	case code >= 3000 && code <= 4999:
		return true
	case code < 1000 || code > 1014:
		return false
	case code == 1004 || code == 1005 || code == 1006:
		return false
	}
	return true
}

func bigMessage(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// wsRegistry tracks open WebSockets so shutdown can close them with 1001
// and wait for their handlers: http.Server.Shutdown forgets hijacked
// connections.
type wsRegistry struct{ openset.Set[*wsConn] }

// closeAll sends 1001 to every open socket and waits for their handlers.
func (r *wsRegistry) closeAll() {
	for _, c := range r.Close() {
		c.goingAway()
	}
	r.Wait()
}
