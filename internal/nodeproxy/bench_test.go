package nodeproxy

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/handshake"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/jwt"
)

// fixedHandshaker hands out one cookie, as a warm handshake cache does.
type fixedHandshaker struct{}

func (fixedHandshaker) Cookie(context.Context, handshake.Target) (string, error) {
	return "dsh-auth-bench=v", nil
}

func (fixedHandshaker) Refresh(context.Context, handshake.Target, string) (string, error) {
	return "dsh-auth-bench=v", nil
}

// BenchmarkThroughput compares requests per second straight to an app
// (a fasthttp server answering 1 KiB) with the same requests through the
// node proxy's full path: route, JWT cookie (cached verification),
// directory lookup, in-flight slot, handshake cookie, header policy,
// streamed response, metrics and access log. Client, proxy and app share
// the machine's cores, so read the ratio, not the absolute numbers.
func BenchmarkThroughput(b *testing.B) {
	body := bytes.Repeat([]byte("x"), 1024)
	app := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("text/plain")
		ctx.SetBody(body)
	}}
	appLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go app.Serve(appLn)
	defer app.Shutdown()

	ring := jwt.NewKeyRing(time.Now().Add(-time.Minute))
	signer, _ := jwt.NewSigner(jwt.SignerOptions{KeyRing: ring, Issuer: testIssuer, Audience: testAudience})
	data, _ := ring.JWKS()
	keys, _ := jwt.ParseJWKS(data)
	ver, _ := jwt.NewVerifier(jwt.VerifierOptions{Keys: keys, Issuer: testIssuer, Audience: testAudience})
	tok, _ := signer.Sign(jwt.Claims{User: "alice", Epoch: 1})
	dir := &fakeDir{entries: map[string]informer.Entry{"alice": {
		Account: account.Account{User: "alice", Epoch: 1},
		Route: informer.Route{State: informer.StateReady, Node: "n", Local: true, Pod: informer.Pod{
			Namespace: testNS, Name: "sb-alice", UID: "00000000-0000-4000-8000-000000000001", Container: "dsh", Addr: appLn.Addr().String(),
		}},
	}}}
	p, err := New(Options{
		NodeName: "n", Directory: dir, Verifier: ver, Handshaker: fixedHandshaker{}, AuthAPI: "http://127.0.0.1:1",
		PeerPort: 1, MaxInFlightPerUser: 1 << 20, Registerer: prometheus.NewRegistry(),
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		b.Fatal(err)
	}
	proxyLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, proxyLn) }()
	defer func() { cancel(); <-done }()

	for _, tc := range []struct {
		name, addr, uri string
		cookie          bool
	}{
		{"direct", appLn.Addr().String(), "/api/x", false},
		{"proxy", proxyLn.Addr().String(), "/u/alice/api/x", true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			c := &fasthttp.HostClient{Addr: tc.addr, MaxConns: 64}
			defer c.CloseIdleConnections()
			b.SetParallelism(32) // 64 client goroutines on 2 cores
			b.ReportAllocs()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.SetRequestURI(tc.uri)
				req.Header.SetHost(testHost)
				if tc.cookie {
					req.Header.SetCookie(DefaultCookieName, tok)
				}
				for pb.Next() {
					if err := c.Do(req, resp); err != nil || resp.StatusCode() != 200 || len(resp.Body()) != len(body) {
						b.Errorf("status %d, %d bytes, %v", resp.StatusCode(), len(resp.Body()), err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
	}
}
