// Package bare is the leanest reverse proxy on the node proxy's library:
// a fasthttp server and client with the node proxy's buffer sizes and
// client settings that strip /u/<user> and forward, with no
// authentication, lookup, header policy, metrics or logging. What it costs
// per request is the library's limit; what the node proxy costs beyond it
// is what its features cost.
package bare

import (
	"bytes"
	"time"

	"github.com/valyala/fasthttp"
)

// New returns a server that forwards /u/<user>/<path> to app/<path>;
// dial, when not nil, connects to the app (tests pass an in-memory one).
func New(app string, dial fasthttp.DialFunc) *fasthttp.Server {
	p := &proxy{app: app, client: &fasthttp.Client{
		// As internal/requestpath/nodeproxy's client to pods.
		NoDefaultUserAgentHeader: true,
		Dial:                     dial,
		StreamResponseBody:       true,
		DisablePathNormalizing:   true,
		MaxIdleConnDuration:      30 * time.Second,
		MaxConnsPerHost:          4096,
		ReadBufferSize:           16 << 10,
		WriteBufferSize:          16 << 10,
	}}
	// As internal/requestpath/nodeproxy's server, without its limits and timeouts.
	return &fasthttp.Server{
		Handler:               p.serve,
		NoDefaultServerHeader: true,
		NoDefaultDate:         true,
		NoDefaultContentType:  true,
		ReadBufferSize:        16 << 10,
		WriteBufferSize:       16 << 10,
	}
}

// proxy forwards every request to one app.
type proxy struct {
	app    string
	client *fasthttp.Client
}

// serve forwards the request and streams the app's answer back.
func (p *proxy) serve(ctx *fasthttp.RequestCtx) {
	req := &ctx.Request
	req.SetRequestURIBytes(stripUser(req.RequestURI()))
	req.UseHostHeader = true
	req.URI().SetHost(p.app)
	if err := p.client.Do(req, &ctx.Response); err != nil {
		ctx.ResetBody()
		ctx.Error("bad gateway", fasthttp.StatusBadGateway)
	}
}

// stripUser turns /u/<user>/<rest> into /<rest>.
func stripUser(uri []byte) []byte {
	rest, ok := bytes.CutPrefix(uri, []byte("/u/"))
	if !ok {
		return uri
	}
	if i := bytes.IndexAny(rest, "/?"); i >= 0 {
		if rest[i] == '?' {
			return append([]byte("/"), rest[i:]...)
		}
		return rest[i:]
	}
	return []byte("/")
}
