package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// modelsBody is the stand-in's answer to GET /v1/models: a fixed size, so
// the load generator checks every answer.
const modelsBody = `{"object":"list","data":[{"id":"standin-model","object":"model","owned_by":"bench"}]}`

// streamEvents is how many token events a streamed completion carries
// after the first.
const streamEvents = 8

// providerStandin stands in for an OpenAI-compatible provider on
// loopback: GET /v1/models answers modelsBody; POST /v1/chat/completions
// streams a first token at once, then streamEvents more and the usage.
func providerStandin(ctx context.Context) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("listen for the provider stand-in: %w", err)
	}
	s := &fasthttp.Server{Handler: serveStandin, NoDefaultServerHeader: true, NoDefaultDate: true}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Serve(ln)
	}()
	stop := func() {
		s.ShutdownWithContext(ctx)
		<-done
	}
	return ln.Addr().String(), stop, nil
}

func serveStandin(ctx *fasthttp.RequestCtx) {
	switch string(ctx.Path()) {
	case "/v1/models":
		ctx.SetContentType("application/json")
		ctx.SetBodyString(modelsBody)
	case "/v1/chat/completions":
		ctx.SetContentType("text/event-stream")
		ctx.Response.ImmediateHeaderFlush = true
		ctx.SetBodyStreamWriter(func(w *bufio.Writer) {
			for i := range streamEvents + 1 {
				fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":\"t%d\"}}]}\n\n", i)
				if w.Flush() != nil {
					return
				}
				if i == 0 {
					time.Sleep(time.Millisecond) // the model thinking between tokens
				}
			}
			fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":9,\"total_tokens\":14}}\n\ndata: [DONE]\n\n")
			w.Flush()
		})
	default:
		ctx.SetStatusCode(fasthttp.StatusNotFound)
	}
}
