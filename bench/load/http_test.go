package load

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// A paced run records, for every measured request, how late the
// generator sent it; a closed-loop run has no schedule to be late for.
func TestPacedRunRecordsGeneratorLag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("ok") }, NoDefaultDate: true}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Shutdown() })
	target := Target{Addr: ln.Addr().String(), Path: "/", Host: "bench", Size: 2}

	paced := Run(context.Background(), Options{Target: target, Conns: 2, Rate: 200, Warmup: 50 * time.Millisecond, Duration: 200 * time.Millisecond})
	if paced.Errors > 0 || paced.Requests == 0 {
		t.Fatalf("paced run: %d requests, %d errors (%s)", paced.Requests, paced.Errors, paced.FirstError)
	}
	if paced.Lag.N != paced.Requests || paced.Lag.Max > paced.Latency.Max {
		t.Errorf("paced run: lag of %d requests (max %s), want %d (at most the latency's max %s)", paced.Lag.N, paced.Lag.Max, paced.Requests, paced.Latency.Max)
	}
	closed := Run(context.Background(), Options{Target: target, Conns: 1, Warmup: 10 * time.Millisecond, Duration: 50 * time.Millisecond})
	if closed.Requests == 0 || closed.Lag.N != 0 {
		t.Errorf("closed run: %d requests, lag of %d, want some requests and no lag", closed.Requests, closed.Lag.N)
	}
}
