package egress

import (
	"bytes"
	"fmt"
	"log/slog"

	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/requestpath/headerrule"
)

// fromProvider is the rule of the response headers passed back to the
// sandbox: the body's type, the provider's request id, processing time and
// API version, rate-limit and retry hints. Nothing that names the key's
// account (openai-organization, openai-project, anthropic-organization-id).
var fromProvider = headerrule.New(headerrule.Spec{
	Allow: []string{"content-type", "cache-control", "retry-after", "x-request-id", "request-id",
		"openai-processing-ms", "openai-version"},
	AllowPrefixes: []string{"x-ratelimit-", "anthropic-ratelimit-"},
})

var eventStream = []byte("text/event-stream")

// respond passes the provider's status and body on as it arrives: a body
// of unknown length goes out chunked with the headers flushed first, so
// each event reaches the sandbox without waiting for more.
func (p *Proxy) respond(ctx *fasthttp.RequestCtx, c *call, up *upstream, resp *fasthttp.Response) {
	c.status, c.answered = resp.StatusCode(), true
	ctx.SetStatusCode(c.status)
	fromProvider.CopyResponse(&ctx.Response.Header, &resp.Header, nil)
	b := &respBody{p: p, c: c, resp: resp,
		m: meter{sse: bytes.HasPrefix(resp.Header.ContentType(), eventStream), maxDoc: maxUsageDocumentBytes}}
	src, _ := resp.BodyStream().(fasthttp.ReadCloserWithError)
	cl := resp.Header.ContentLength()
	if src == nil || cl == 0 {
		if src != nil {
			src.CloseWithError(nil)
		}
		body := resp.Body()
		b.m.write(body)
		ctx.Response.SetBody(body)
		b.end(nil)
		return
	}
	b.src = src
	if cl < 0 {
		cl = -1
		ctx.Response.ImmediateHeaderFlush = true
	}
	ctx.Response.SetBodyStream(b, cl)
}

// respBody streams a provider's response to the sandbox and meters its
// usage; fasthttp closes it once written or when the sandbox has gone.
type respBody struct {
	p    *Proxy
	c    *call
	resp *fasthttp.Response
	src  fasthttp.ReadCloserWithError
	m    meter
	done bool
}

// Read passes on what the provider sent and meters it. It runs after
// serve has returned, outside its recover: a panic here ends this stream
// as a panic, logged like serve's, instead of fasthttp's own recover
// logging the panic's value as an aborted call.
func (b *respBody) Read(buf []byte) (n int, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicError(r)
			b.c.outcome = outcomePanic
			b.p.log.Error("egress stream ended by a panic", "client", b.c.client, "user", b.c.caller.User, "provider", b.c.provider, "err", err)
			n = 0
		}
	}()
	n, err = b.src.Read(buf)
	if n > 0 {
		b.m.write(buf[:n])
	}
	return n, err
}

// CloseWithError ends the stream: err is why the sandbox side stopped
// early (nil once the body was written).
func (b *respBody) CloseWithError(err error) error {
	if b.src != nil {
		b.src.CloseWithError(err)
	}
	b.end(err)
	return nil
}

func (b *respBody) end(err error) {
	if b.done {
		return
	}
	b.done = true
	fasthttp.ReleaseResponse(b.resp)
	c := b.c
	c.usage = b.m.done()
	if err != nil && c.outcome != outcomePanic {
		c.outcome = outcomeAborted
	}
	b.p.finish(c)
}

// serverLogger sends fasthttp's own messages (a connection it dropped) to
// the proxy's log at Debug.
type serverLogger struct{ log *slog.Logger }

func (l serverLogger) Printf(format string, args ...any) {
	l.log.Debug(fmt.Sprintf(format, args...))
}
