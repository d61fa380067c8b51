// Package origin is the bench's upstream app: the physical limit the node
// proxy is measured against. It answers fixed-size bodies, an SSE stream
// whose events carry their send time, a WebSocket echo and the
// launch-token exchange, all from fasthttp with nothing else on the path.
package origin

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/bench/podlogs"
)

// Paths the origin serves.
const (
	// BytesPath is followed by a size: GET /bytes/1024 answers 1 KiB.
	BytesPath = "/bytes/"
	// EventsPath streams ?n= events every ?every= milliseconds; each
	// event's data is its send time in Unix nanoseconds.
	EventsPath = "/events"
	// WSPath echoes every WebSocket message.
	WSPath = "/ws"
)

// maxBody bounds BytesPath sizes.
const maxBody = 1 << 20

// New returns the origin's server.
func New() *fasthttp.Server {
	o := &origin{bodies: map[int][]byte{}, up: websocket.FastHTTPUpgrader{ReadBufferSize: 4 << 10, WriteBufferSize: 4 << 10}}
	for _, n := range []int{1 << 10, 64 << 10} {
		o.bodies[n] = bytes.Repeat([]byte("x"), n)
	}
	return &fasthttp.Server{Handler: o.serve, Name: "origin", NoDefaultDate: true, NoDefaultContentType: true}
}

// origin serves the bench paths.
type origin struct {
	bodies map[int][]byte // read-only after New
	up     websocket.FastHTTPUpgrader
}

// serve routes a request to its path's answer.
func (o *origin) serve(ctx *fasthttp.RequestCtx) {
	path := string(ctx.Path())
	switch {
	case strings.HasPrefix(path, BytesPath):
		n, err := strconv.Atoi(path[len(BytesPath):])
		if err != nil || n < 0 || n > maxBody {
			ctx.Error("bad size", fasthttp.StatusBadRequest)
			return
		}
		body, ok := o.bodies[n]
		if !ok {
			body = bytes.Repeat([]byte("x"), n)
		}
		ctx.SetContentType("application/octet-stream")
		ctx.SetBody(body)
	case path == EventsPath:
		o.events(ctx)
	case path == "/":
		o.exchange(ctx)
	case path == WSPath:
		if err := o.up.Upgrade(ctx, echo); err != nil {
			ctx.Error("upgrade failed", fasthttp.StatusBadRequest)
		}
	default:
		ctx.Error("not found", fasthttp.StatusNotFound)
	}
}

// exchange answers the launch-token exchange of the bench's pods.
func (o *origin) exchange(ctx *fasthttp.RequestCtx) {
	c, ok := podlogs.Exchange(string(ctx.QueryArgs().Peek("token")))
	if !ok {
		ctx.Error("unknown token", fasthttp.StatusUnauthorized)
		return
	}
	ctx.Response.Header.Set("Set-Cookie", c)
	ctx.Redirect("/", fasthttp.StatusSeeOther)
}

// events streams the SSE events ?n and ?every ask for.
func (o *origin) events(ctx *fasthttp.RequestCtx) {
	n := ctx.QueryArgs().GetUintOrZero("n")
	every := time.Duration(ctx.QueryArgs().GetUintOrZero("every")) * time.Millisecond
	ctx.SetContentType("text/event-stream")
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
		for range n {
			time.Sleep(every)
			if _, err := fmt.Fprintf(w, "data: %d\n\n", time.Now().UnixNano()); err != nil {
				return
			}
			if err := w.Flush(); err != nil {
				return
			}
		}
	})
}

// echo sends every message back until the connection ends.
func echo(c *websocket.Conn) {
	defer c.Close()
	for {
		typ, msg, err := c.ReadMessage()
		if err != nil {
			return
		}
		if err := c.WriteMessage(typ, msg); err != nil {
			return
		}
	}
}
