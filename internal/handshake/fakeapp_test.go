package handshake

import (
	"bufio"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// fakeApp stands in for the agent web app's token exchange on an in-memory
// listener: GET /?token=<token> answers a redirect with its cookies, any
// other token 401.
type fakeApp struct {
	ln        *fasthttputil.InmemoryListener
	srv       *fasthttp.Server
	exchanges atomic.Int32

	mu      sync.Mutex
	token   string   // the token it accepts
	cookies []string // Set-Cookie header values of the redirect
	status  int      // status of an accepted exchange; 0 means 303
	gate    chan struct{}
	entered chan struct{} // receives once per exchange when gate is set
	raw     string        // when set, written verbatim instead of a response

	seen testkit.Recorder[seenRequest]
}

// seenRequest is what the app saw of one exchange.
type seenRequest struct {
	uri, host, forwardedFor, forwardedProto, forwardedHost, cookie string
}

func newFakeApp(t *testing.T, token string, cookies ...string) *fakeApp {
	t.Helper()
	a := &fakeApp{ln: fasthttputil.NewInmemoryListener(), token: token, cookies: cookies}
	a.srv = &fasthttp.Server{
		Handler: a.handle,
		Logger:  quietLogger{},
		// The worker pool's cleaner sleeps this long before it notices
		// the server stopped.
		MaxIdleWorkerDuration: 10 * time.Millisecond,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.srv.Serve(a.ln)
	}()
	t.Cleanup(func() {
		a.ln.Close()
		a.srv.Shutdown()
		<-done
	})
	return a
}

func (a *fakeApp) dial(string) (net.Conn, error) { return a.ln.Dial() }

// set changes what the app accepts and answers.
func (a *fakeApp) set(token string, cookies ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.token, a.cookies = token, cookies
}

// hold makes exchanges wait until the returned release is called; each
// exchange signals entered first.
func (a *fakeApp) hold() (entered <-chan struct{}, release func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.gate = make(chan struct{})
	a.entered = make(chan struct{}, 100)
	gate := a.gate
	var once sync.Once
	return a.entered, func() { once.Do(func() { close(gate) }) }
}

func (a *fakeApp) handle(ctx *fasthttp.RequestCtx) {
	a.exchanges.Add(1)
	a.seen.Add(seenRequest{
		uri:            string(ctx.RequestURI()),
		host:           string(ctx.Host()),
		forwardedFor:   string(ctx.Request.Header.Peek("X-Forwarded-For")),
		forwardedProto: string(ctx.Request.Header.Peek("X-Forwarded-Proto")),
		forwardedHost:  string(ctx.Request.Header.Peek("X-Forwarded-Host")),
		cookie:         string(ctx.Request.Header.Peek("Cookie")),
	})
	a.mu.Lock()
	gate, entered, raw := a.gate, a.entered, a.raw
	token, cookies, status := a.token, a.cookies, a.status
	a.mu.Unlock()

	if gate != nil {
		entered <- struct{}{}
		<-gate
	}
	if raw != "" {
		ctx.HijackSetNoResponse(true)
		ctx.Hijack(func(c net.Conn) {
			w := bufio.NewWriter(c)
			w.WriteString(raw)
			w.Flush()
		})
		return
	}
	if string(ctx.QueryArgs().Peek("token")) != token || !ctx.IsGet() || string(ctx.Path()) != "/" {
		ctx.SetStatusCode(fasthttp.StatusUnauthorized)
		return
	}
	for _, c := range cookies {
		ctx.Response.Header.Add("Set-Cookie", c)
	}
	ctx.Response.Header.Set("Location", "/")
	if status == 0 {
		status = fasthttp.StatusSeeOther
	}
	ctx.SetStatusCode(status)
}

// quietLogger drops fasthttp's server log; the malformed-response cases
// make it complain on purpose.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}
