package nodeproxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// body is a request body on its way upstream: a buffered prefix (the whole
// body when rest is nil) and the rest of the client's stream.
type body struct {
	buf  *bodyBuf    // nil for an empty body
	rest *bodyReader // nil once the body is complete
	size int         // Content-Length, or -1 when chunked
}

// complete reports whether the whole body is in memory, so the request
// can be sent again.
// emptyBody is the body of every request that has none. It is shared, so nothing
// writes it: release has nothing to give back.
var emptyBody body

func (b *body) complete() bool { return b.rest == nil }

// attach sets the body on an upstream request.
func (b *body) attach(req *fasthttp.Request) {
	switch {
	case b.buf == nil:
		req.ResetBody()
	case b.rest == nil:
		req.SetBodyRaw(b.buf.B)
	default:
		req.SetBodyStream(io.MultiReader(bytes.NewReader(b.buf.B), b.rest), b.size)
	}
}

// failure returns why streaming the body stopped early, if it did: the
// client went away or sent too much.
func (b *body) failure() error {
	if b.rest == nil {
		return nil
	}
	return b.rest.err
}

func (b *body) release() {
	if b.buf != nil {
		b.buf.B = b.buf.B[:0]
		bodyBufs.Put(b.buf)
		b.buf = nil
	}
}

// uploads is what a body that cannot be sent twice (one past
// BufferBodyBytes) needs to reach the app in one go: a connection of its
// own, never one the pool kept idle, which the app may have closed
// meanwhile (a restart, its idle timeout); and a cookie the app accepted
// lately (confirm).
type uploads struct {
	client   *fasthttp.Client // the forwarder's client's settings; every connection closed after its request
	accepted *acceptedCookies
}

func newUploads(c *fasthttp.Client, now func() time.Time) *uploads {
	return &uploads{
		client: &fasthttp.Client{
			NoDefaultUserAgentHeader: c.NoDefaultUserAgentHeader,
			Dial:                     c.Dial,
			StreamResponseBody:       c.StreamResponseBody,
			DisablePathNormalizing:   c.DisablePathNormalizing,
			MaxConnsPerHost:          c.MaxConnsPerHost,
			ReadBufferSize:           c.ReadBufferSize,
			WriteBufferSize:          c.WriteBufferSize,
			TLSConfig:                c.TLSConfig,
		},
		accepted: newAcceptedCookies(now),
	}
}

// bodyBuf is a pooled buffer for request bodies.
type bodyBuf struct{ B []byte }

// Write appends to the buffer, for io.CopyN.
func (b *bodyBuf) Write(p []byte) (int, error) {
	b.B = append(b.B, p...)
	return len(p), nil
}

var bodyBufs = sync.Pool{New: func() any { return &bodyBuf{B: make([]byte, 0, 4096)} }}

// bodyReader reads the client's body stream, enforcing MAX_BODY_MB and
// telling a truncated body (client gone) from a complete one.
type bodyReader struct {
	r    io.Reader
	left int64 // bytes still allowed
	read int64
	size int64 // Content-Length, or -1
	err  error // first failure: ErrBodyTooLarge or ErrClientClosed
	// onData, when set, is told of every chunk read (activity tracking).
	onData func()
}

func (r *bodyReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	if int64(len(p)) > r.left+1 {
		p = p[:r.left+1]
	}
	n, err := r.r.Read(p)
	r.read += int64(n)
	if n > 0 && r.onData != nil {
		r.onData()
	}
	r.left -= int64(n)
	switch {
	case r.left < 0:
		r.err = ErrBodyTooLarge
		return n, r.err
	case errors.Is(err, io.EOF) && r.size >= 0 && r.read < r.size:
		r.err = fmt.Errorf("%w: body ended after %d of %d bytes", ErrClientClosed, r.read, r.size)
		return n, r.err
	case err != nil && !errors.Is(err, io.EOF):
		r.err = fmt.Errorf("%w: reading body", ErrClientClosed)
		return n, r.err
	}
	return n, err
}

// readBody is the body-read stage: it buffers up to BufferBodyBytes of the
// request body. A body that fits is complete before the upstream sees the
// request, so a client that aborts mid-upload reaches nobody (499) and a
// 401 from the app can be retried; a larger body streams after the
// buffered prefix. A declared length over MaxBodyBytes is refused at once,
// a chunked body once it grows past it.
func (fw *forwarder) readBody(ctx *fasthttp.RequestCtx, x *exchange) (*body, func(), error) {
	b, err := fw.readBodyUpTo(ctx, x, fw.maxBodyBytes, fw.bufferBodyBytes)
	return b, noRelease, err
}

// readBodyUpTo is readBody with limit in place of MaxBodyBytes and buffer
// in place of BufferBodyBytes.
func (fw *forwarder) readBodyUpTo(ctx *fasthttp.RequestCtx, x *exchange, limit int64, buffer int) (*body, error) {
	cl := ctx.Request.Header.ContentLength()
	switch {
	case cl == 0 || cl < -1:
		// No body (-2 means none was framed).
		return &emptyBody, nil
	case int64(cl) > limit:
		return nil, fmt.Errorf("%w: %d bytes declared", ErrBodyTooLarge, cl)
	}
	b := &body{size: cl}
	var src io.Reader = ctx.RequestBodyStream()
	if src == nil {
		src = bytes.NewReader(ctx.Request.Body())
	}
	br := &bodyReader{r: src, left: limit, size: int64(cl)}
	if x.tracked {
		br.onData = func() { fw.activity.traffic(x) }
	}
	b.buf = bodyBufs.Get().(*bodyBuf)
	n, err := io.CopyN(b.buf, br, int64(buffer)+1)
	switch {
	case errors.Is(err, io.EOF):
		return b, nil
	case err != nil:
		b.release()
		return nil, err
	case n <= int64(buffer):
		return b, nil
	}
	b.rest = br
	return b, nil
}
