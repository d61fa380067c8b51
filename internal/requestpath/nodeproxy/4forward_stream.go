package nodeproxy

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/valyala/bytebufferpool"
	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/openset"
)

// respBody streams an upstream response body to the client. fasthttp reads
// it after the handler has returned and closes it when the response has
// been written or the client has gone; that is when the request finishes.
// It implements only fasthttp.ReadCloserWithError, so it is closed once.
type respBody struct {
	fw    *forwarder
	x     *exchange
	resp  *fasthttp.Response
	src   fasthttp.ReadCloserWithError
	event bool // text/event-stream: ended at once on shutdown
	n     int64
	once  sync.Once
	watch *sessionWatch

	// closed is set, under mu, when the body is closed: src is then
	// released and interrupt must not touch it.
	mu     sync.Mutex
	closed bool
}

func (b *respBody) Read(buf []byte) (int, error) {
	n, err := b.src.Read(buf)
	b.n += int64(n)
	if n > 0 {
		b.fw.activity.traffic(b.x)
	}
	return n, err
}

// CloseWithError ends the stream: err is why the client side stopped
// early (nil once the body was written).
func (b *respBody) CloseWithError(err error) error {
	b.once.Do(func() {
		b.watch.stop()
		b.fw.streams.Remove(b)
		b.mu.Lock()
		b.closed = true
		b.src.CloseWithError(err)
		b.mu.Unlock()
		fasthttp.ReleaseResponse(b.resp)
		b.x.bytesOut = b.n
		if err != nil {
			b.x.aborted = true
		}
		b.fw.end.finish(b.x)
	})
	return nil
}

// interrupt ends a stream from outside (shutdown): closing the upstream
// connection wakes a Read blocked on it, and fasthttp then closes b.
func (b *respBody) interrupt() { b.interruptWith(ErrShuttingDown) }

// sessionEnded ends a stream whose session has ended: the client's
// connection closes with the body unfinished.
func (b *respBody) sessionEnded() { b.interruptWith(ErrUnauthenticated) }

func (b *respBody) interruptWith(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.src.CloseWithError(err)
	}
}

// streamRegistry tracks response bodies being streamed, so shutdown can
// end them.
type streamRegistry struct{ openset.Set[*respBody] }

// closeAll interrupts the event streams, or every stream when !eventsOnly.
func (r *streamRegistry) closeAll(eventsOnly bool) {
	for _, b := range r.Members() {
		if b.event || !eventsOnly {
			b.interrupt()
		}
	}
}

var eventStream = []byte("text/event-stream")

// copyBodyMax is the largest response body of known length that is read
// whole before the answer is sent: the answer then leaves in one write
// with its headers and the request ends at once, with no stream to track.
// Larger bodies and bodies of unknown length stream.
const copyBodyMax = 16 << 10

// respond copies an upstream response to the client: headers through rp,
// and the body copied whole when small, else streamed as it arrives. A
// body of unknown length goes out chunked with the headers flushed first,
// so each upstream write (an SSE event) reaches the client without waiting
// for more.
//
// A final status below 200 is refused: fasthttp's client has already
// skipped the interim ones, so it is a 101 to a request the proxy did not
// upgrade itself. Passed on, it would tell a front proxy that the client's
// connection is now a tunnel, whose next requests, forwarded headers and
// all, would reach this proxy as if the front proxy had sent them.
func (fw *forwarder) respond(ctx *fasthttp.RequestCtx, x *exchange, resp *fasthttp.Response, rp respPolicy) error {
	if status := resp.StatusCode(); status < fasthttp.StatusOK {
		discard(resp)
		return fmt.Errorf("%w: status %d as a final answer", ErrUpstream, status)
	}
	src, _ := resp.BodyStream().(fasthttp.ReadCloserWithError)
	cl := resp.Header.ContentLength()
	if src != nil && cl > 0 && cl <= copyBodyMax && !ctx.IsHead() && !noBody(resp.StatusCode()) {
		return fw.respondWhole(ctx, x, resp, rp, src, cl)
	}
	rp.copyResponse(&ctx.Response.Header, &resp.Header)
	x.status = resp.StatusCode()
	if src == nil || ctx.IsHead() || noBody(resp.StatusCode()) || cl == 0 {
		if src != nil {
			src.CloseWithError(nil)
		}
		switch {
		case ctx.IsHead() && cl >= 0:
			ctx.Response.SkipBody = true
			ctx.Response.Header.SetContentLength(cl)
		case src == nil && len(resp.Body()) > 0:
			// A body the client buffered after all.
			ctx.Response.SetBody(resp.Body())
			x.bytesOut = int64(len(resp.Body()))
		}
		fasthttp.ReleaseResponse(resp)
		fw.end.finish(x)
		return nil
	}
	b := &respBody{fw: fw, x: x, resp: resp, src: src,
		event: bytes.HasPrefix(resp.Header.ContentType(), eventStream)}
	fw.streams.Add(b)
	if b.event && fw.draining.Load() {
		// Shutdown has ended the event streams it found; this one came
		// after.
		b.interrupt()
	}
	b.watch = fw.watch.session(x, watchStream, b.sessionEnded)
	if cl < 0 {
		cl = -1
		ctx.Response.ImmediateHeaderFlush = true
	}
	ctx.Response.SetBodyStream(b, cl)
	return nil
}

// respondWhole reads a small body of length cl, in a pooled buffer,
// before answering. An
// upstream that ends it early gets the client a 502 instead of a
// truncated answer.
func (fw *forwarder) respondWhole(ctx *fasthttp.RequestCtx, x *exchange, resp *fasthttp.Response, rp respPolicy, src fasthttp.ReadCloserWithError, cl int) error {
	buf := bytebufferpool.Get()
	defer bytebufferpool.Put(buf)
	buf.B = slices.Grow(buf.B[:0], cl)[:cl]
	n, err := io.ReadFull(src, buf.B)
	src.CloseWithError(err)
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		return fmt.Errorf("%w: response body cut short", ErrUpstream)
	}
	ctx.Response.SetBody(buf.B)
	rp.copyResponse(&ctx.Response.Header, &resp.Header)
	x.status = resp.StatusCode()
	x.bytesOut = int64(n)
	fw.activity.traffic(x)
	fasthttp.ReleaseResponse(resp)
	fw.end.finish(x)
	return nil
}

// noBody reports statuses that never carry a body.
func noBody(status int) bool {
	return status < 200 || status == fasthttp.StatusNoContent || status == fasthttp.StatusNotModified
}

var _ io.Reader = (*respBody)(nil)
