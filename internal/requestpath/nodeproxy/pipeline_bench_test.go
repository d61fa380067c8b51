package nodeproxy

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/informer"
)

// pipelineBody is the app's answer in the pipeline benchmark, the bench's
// data-path cell of 1 KiB.
var pipelineBody = bytes.Repeat([]byte("x"), 1<<10)

// pipelineCookie is the cookie the pipeline's app gives for its launch
// token.
const pipelineCookie = "dsh-auth-1=pipeline"

// allocBudget is the pipeline's allowance of allocations per plain
// proxied request above a bare fasthttp proxy's on the same client, the
// same app and the same request (BenchmarkPipeline/bare).
const allocBudget = 6

// BenchmarkPipeline runs one plain proxied GET of 1 KiB with a session
// cookie through the node proxy as New builds it, in process, against a
// fasthttp app on loopback that does the launch-token exchange: each stage
// on its own (begin: route, client and guard; auth; resolve; handshake,
// from its cache), the whole pipeline (all: serve, to the finished access
// log), and a bare fasthttp proxy of the same request on the same client
// settings (bare). The last line compares all with bare and with the
// budget:
//
//	go test -run '^$' -bench Pipeline -benchmem ./internal/requestpath/nodeproxy
func BenchmarkPipeline(b *testing.B) {
	h := newHarness(b, harnessOpts{modify: func(o *Options) {
		o.AccessLogSummary = time.Hour
		o.MaxInFlightPerUser = 1 << 20
	}})
	n := h.nodes["node-a"]
	pod := startFastPod(b, n.logRoot, "sb-alice", "00000001-0000-4000-8000-000000000001")
	h.dir.set("alice", informer.Entry{
		Account: account.Account{User: "alice", UID: pod.uid, TokenHash: account.HashToken("tok-alice"), Epoch: 1},
		Route: informer.Route{
			State: informer.StateReady, Sandbox: "sb-alice", Node: "node-a", NodeIP: nodeIPs["node-a"], Local: true,
			Pod: informer.Pod{Namespace: testNS, Name: pod.name, UID: pod.uid, Container: "dsh", Addr: pod.addr},
		},
	})
	p := n.proxy
	// The request as the server reads it off the wire: its cookies are
	// parsed only if something asks for them.
	var req fasthttp.Request
	raw := "GET /u/alice/bytes HTTP/1.1\r\nHost: " + testHost + "\r\nAccept: */*\r\nUser-Agent: sandgate-bench\r\n" +
		"Cookie: theme=dark; " + cookie(h.session("alice")) + "; lang=en\r\n\r\n"
	if err := req.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		b.Fatal(err)
	}
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, &net.TCPAddr{IP: net.IPv4(203, 0, 113, 7), Port: 40000}, nil)
	serve := func(run func()) {
		req.CopyTo(&ctx.Request)
		ctx.Response.Reset()
		run()
		if ctx.Response.StatusCode() != fasthttp.StatusOK || len(ctx.Response.Body()) != len(pipelineBody) {
			b.Fatalf("status %d, %d bytes: %s", ctx.Response.StatusCode(), len(ctx.Response.Body()), ctx.Response.Body())
		}
	}
	serve(func() { p.serve(&ctx) }) // the handshake, cached from here on

	stages := map[string]func(){}
	x := p.guard.begin(&ctx)
	_, entry, err := p.sessions.auth(&ctx, x)
	if err != nil {
		b.Fatal(err)
	}
	t, err := p.forward.resolve(x, entry)
	if err != nil {
		b.Fatal(err)
	}
	stages["begin"] = func() { p.guard.begin(&ctx) }
	stages["auth"] = func() {
		if _, _, err := p.sessions.auth(&ctx, x); err != nil {
			b.Fatal(err)
		}
	}
	stages["resolve"] = func() {
		if _, err := p.forward.resolve(x, entry); err != nil {
			b.Fatal(err)
		}
	}
	stages["handshake"] = func() {
		if _, err := p.forward.handshake(&ctx, x, t); err != nil {
			b.Fatal(err)
		}
	}
	for _, name := range []string{"begin", "auth", "resolve", "handshake"} {
		run := stages[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				req.CopyTo(&ctx.Request)
				run()
			}
		})
	}
	bare := bareProxy(pod.addr)
	ways := []struct {
		name string
		run  func()
	}{{"all", func() { p.serve(&ctx) }}, {"bare", func() { bare(&ctx) }}}
	nsPerOp := map[string]float64{}
	for _, w := range ways {
		b.Run(w.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				serve(w.run)
			}
			nsPerOp[w.name] = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
		})
	}
	all := testing.AllocsPerRun(1000, func() { serve(ways[0].run) })
	bareAllocs := testing.AllocsPerRun(1000, func() { serve(ways[1].run) })
	verdict := "within"
	if all-bareAllocs > allocBudget {
		verdict = "OVER"
	}
	b.Logf("pipeline: %.0f ns/op, %.0f allocs/op; bare fasthttp proxy: %.0f ns/op, %.0f allocs/op; %.2fx the time, %.0f allocs above bare: %s the budget of %d",
		nsPerOp["all"], all, nsPerOp["bare"], bareAllocs, nsPerOp["all"]/nsPerOp["bare"], all-bareAllocs, verdict, allocBudget)
}

// bareProxy is the bench's way (d) in process: the request sent on to addr
// with the node proxy's client settings and the app's cookie, the answer
// copied back, nothing else.
func bareProxy(addr string) func(ctx *fasthttp.RequestCtx) {
	client := &fasthttp.Client{NoDefaultUserAgentHeader: true, StreamResponseBody: true, DisablePathNormalizing: true,
		MaxIdleConnDuration: 30 * time.Second}
	return func(ctx *fasthttp.RequestCtx) {
		req := fasthttp.AcquireRequest()
		resp := fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		ctx.Request.CopyTo(req)
		req.SetRequestURI("http://" + addr + "/bytes")
		req.Header.SetHost(addr)
		req.Header.Set("Cookie", pipelineCookie)
		if err := client.Do(req, resp); err != nil {
			ctx.Error(err.Error(), fasthttp.StatusBadGateway)
			return
		}
		resp.Header.CopyTo(&ctx.Response.Header)
		ctx.Response.SetBody(resp.Body())
	}
}

// startFastPod runs a pod's app on fasthttp, so that the benchmark counts
// the proxy's allocations, not the app's: its launch line goes to the
// pod's log file, it trades the launch token for its cookie and answers
// pipelineBody to a request that carries the cookie.
func startFastPod(tb testing.TB, logRoot, name, uid string) *pod {
	tb.Helper()
	dir := filepath.Join(logRoot, testNS+"_"+name+"_"+uid, "dsh")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	const token = "pipeline-launch-token-0123456789abcdef"
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		switch {
		case string(ctx.Path()) == "/" && string(ctx.QueryArgs().Peek("token")) == token:
			ctx.Response.Header.Set("Set-Cookie", pipelineCookie+"; Path=/; HttpOnly")
			ctx.Redirect("/", fasthttp.StatusSeeOther)
		case string(ctx.Request.Header.Cookie("dsh-auth-1")) != "pipeline":
			ctx.SetStatusCode(fasthttp.StatusUnauthorized)
		default:
			ctx.SetContentType("application/octet-stream")
			ctx.SetBody(pipelineBody)
		}
	}, NoDefaultDate: true, NoDefaultServerHeader: true}
	p := &pod{t: tb, name: name, uid: uid, addr: ln.Addr().String(), log: &criLog{path: filepath.Join(dir, "0.log")}, done: make(chan error, 1)}
	fmt.Fprintf(p.log, "dsh web: listening on http://%s/?token=%s\n", p.addr, token)
	p.cancel = func() { _ = srv.Shutdown() }
	go func() { p.done <- srv.Serve(ln) }()
	tb.Cleanup(p.stop)
	return p
}
