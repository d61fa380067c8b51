package bare

import (
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

func TestStripUser(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/u/alice/bytes/1024", "/bytes/1024"},
		{"/u/alice/?token=x", "/?token=x"},
		{"/u/alice?x=1", "/?x=1"},
		{"/u/alice", "/"},
		{"/other", "/other"},
	} {
		if got := string(stripUser([]byte(tc.in))); got != tc.want {
			t.Errorf("stripUser(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// serve runs srv on an in-memory listener until the test ends.
func serve(t *testing.T, srv *fasthttp.Server) *fasthttputil.InmemoryListener {
	t.Helper()
	srv.MaxIdleWorkerDuration = 10 * time.Millisecond
	ln := fasthttputil.NewInmemoryListener()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() { srv.Shutdown(); <-done })
	return ln
}

func TestForwards(t *testing.T) {
	app := serve(t, &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.Response.Header.Set("X-Host", string(ctx.Host()))
		ctx.SetBodyString(string(ctx.RequestURI()))
	}})
	px := serve(t, New("app.internal:80", func(string) (net.Conn, error) { return app.Dial() }))
	c := &fasthttp.HostClient{Addr: "proxy", Dial: func(string) (net.Conn, error) { return px.Dial() }}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	for range 3 {
		req.SetRequestURI("http://gateway.example/u/alice/bytes/1024?x=1")
		if err := c.Do(req, resp); err != nil {
			t.Fatal(err)
		}
		if got := string(resp.Body()); got != "/bytes/1024?x=1" {
			t.Errorf("app saw %q", got)
		}
		if got := string(resp.Header.Peek("X-Host")); got != "gateway.example" {
			t.Errorf("app saw Host %q, want the client's", got)
		}
	}
	c.CloseIdleConnections()
}
