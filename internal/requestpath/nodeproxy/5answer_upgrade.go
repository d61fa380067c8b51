package nodeproxy

import (
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"
)

// upgrade answers the handshake with 101; run gets the client connection
// once fasthttp has written the response. If the handshake is invalid the
// upgrader has answered with an HTTP error and upgrade reports false. If
// the client is gone before the 101 is written, fasthttp never calls run;
// a timer then cleans up with abandon and finishes the request, so its
// slot is released.
func (a *answers) upgrade(ctx *fasthttp.RequestCtx, x *exchange, run func(*websocket.Conn), abandon func()) bool {
	conn := clientConnOf(ctx)
	if conn != nil {
		conn.upgraded.Store(true)
	}
	var claimed atomic.Bool
	guard := time.AfterFunc(a.upgradeTimeout, func() {
		if claimed.CompareAndSwap(false, true) {
			if abandon != nil {
				abandon()
			}
			x.aborted = true
			a.finish(x)
		}
	})
	err := a.upgrader.Upgrade(ctx, func(c *websocket.Conn) {
		if !claimed.CompareAndSwap(false, true) {
			return
		}
		guard.Stop()
		x.status = fasthttp.StatusSwitchingProtocols
		run(c)
	})
	if err != nil {
		guard.Stop()
		if conn != nil {
			conn.upgraded.Store(false)
		}
		if abandon != nil {
			abandon()
		}
		x.status = ctx.Response.StatusCode()
		a.finish(x)
		return false
	}
	return true
}
