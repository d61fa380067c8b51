package load

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
)

// Target is what the load is sent to.
type Target struct {
	// Addr is host:port; Path the request URI; Host the Host header.
	Addr string `json:"addr"`
	Path string `json:"path"`
	Host string `json:"host"`
	// Cookie, when set, is sent as the whole Cookie header.
	Cookie string `json:"cookie,omitempty"`
	// Sessions, when set, replace Path and Cookie: each request is sent
	// as one of them, picked at random.
	Sessions []Session `json:"sessions,omitempty"`
	// Size is the body length every answer must have.
	Size int `json:"size"`
}

// Session is one user's session: the path it requests and its Cookie.
type Session struct {
	Path   string `json:"path"`
	Cookie string `json:"cookie"`
}

// Options shape one load run.
type Options struct {
	Target Target
	// Conns is the number of connections, each with one request in
	// flight at a time.
	Conns int
	// Rate, when set, paces the requests to that many per second in
	// total; latency then counts from each request's scheduled time, so
	// that a stall is not hidden. Zero runs closed-loop, as fast as the
	// answers come.
	Rate float64
	// Warmup runs before measuring; Duration is measured.
	Warmup   time.Duration
	Duration time.Duration
}

// Result is one load run's outcome.
type Result struct {
	// Requests counts the measured requests; Total also the warm-up's.
	Requests int     `json:"requests"`
	Total    int     `json:"total"`
	Errors   int     `json:"errors"`
	RPS      float64 `json:"rps"`
	Latency  Latency `json:"latency"`
	// Lag, in a paced run, is how late each measured request left the
	// generator after its scheduled time: a stalled generator, not the
	// server, when it is near Latency's tail.
	Lag Latency `json:"lag"`
	// FirstError describes the first failed request.
	FirstError string `json:"first_error,omitempty"`
}

// Run sends load as o says and measures it.
func Run(ctx context.Context, o Options) Result {
	c := &fasthttp.HostClient{
		Addr: o.Target.Addr, MaxConns: o.Conns, NoDefaultUserAgentHeader: true,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, MaxIdleConnDuration: time.Minute,
	}
	defer c.CloseIdleConnections()
	start := time.Now().Add(o.Warmup)
	end := start.Add(o.Duration)
	ctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	workers := make([]worker, o.Conns)
	var wg sync.WaitGroup
	for i := range workers {
		w := &workers[i]
		w.c, w.t = c, o.Target
		w.pick = rand.New(rand.NewPCG(uint64(i), 23))
		if o.Rate > 0 {
			interval := time.Duration(float64(o.Conns) / o.Rate * float64(time.Second))
			first := time.Now().Add(interval * time.Duration(i) / time.Duration(o.Conns))
			wg.Go(func() { w.paced(ctx, start, first, interval) })
		} else {
			wg.Go(func() { w.closed(ctx, start) })
		}
	}
	wg.Wait()
	var r Result
	var all, lags []time.Duration
	for i := range workers {
		all = append(all, workers[i].samples...)
		lags = append(lags, workers[i].lags...)
		r.Errors += workers[i].errors
		r.Total += workers[i].ok
		if r.FirstError == "" && workers[i].firstErr != nil {
			r.FirstError = workers[i].firstErr.Error()
		}
	}
	r.Requests = len(all)
	r.RPS = float64(len(all)) / o.Duration.Seconds()
	r.Latency = Summarise(all)
	r.Lag = Summarise(lags)
	return r
}

// worker is one connection's request loop.
type worker struct {
	c        *fasthttp.HostClient
	t        Target
	pick     *rand.Rand
	samples  []time.Duration
	lags     []time.Duration // paced: send time minus scheduled time
	ok       int             // successful requests, warm-up included
	errors   int
	firstErr error
}

// closed sends the next request as soon as the previous one is answered.
func (w *worker) closed(ctx context.Context, measureFrom time.Time) {
	req, resp := w.request()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	for ctx.Err() == nil {
		t0 := time.Now()
		ok := w.do(req, resp)
		if t0.After(measureFrom) && ok {
			w.samples = append(w.samples, time.Since(t0))
		}
	}
}

// paced sends a request every interval from next on, late ones at once.
func (w *worker) paced(ctx context.Context, measureFrom, next time.Time, interval time.Duration) {
	req, resp := w.request()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	for ctx.Err() == nil {
		if d := time.Until(next); d > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d):
			}
		}
		lag := time.Since(next)
		ok := w.do(req, resp)
		if next.After(measureFrom) && ok {
			w.samples = append(w.samples, time.Since(next))
			w.lags = append(w.lags, lag)
		}
		next = next.Add(interval)
	}
}

// request builds the worker's request and a response to reuse.
func (w *worker) request() (*fasthttp.Request, *fasthttp.Response) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	req.SetRequestURI(w.t.Path)
	req.Header.SetHost(w.t.Host)
	if w.t.Cookie != "" {
		req.Header.Set("Cookie", w.t.Cookie)
	}
	return req, resp
}

// do sends one request, as a random session when the target has them,
// and checks the answer's status and size.
func (w *worker) do(req *fasthttp.Request, resp *fasthttp.Response) bool {
	if n := len(w.t.Sessions); n > 0 {
		s := w.t.Sessions[w.pick.IntN(n)]
		req.SetRequestURI(s.Path)
		// Set adds to the request's cookies; the last session's must go.
		req.Header.DelAllCookies()
		req.Header.Set("Cookie", s.Cookie)
	}
	err := w.c.Do(req, resp)
	if err == nil && (resp.StatusCode() != fasthttp.StatusOK || len(resp.Body()) != w.t.Size) {
		err = fmt.Errorf("status %d with %d bytes (%.64q), want 200 with %d", resp.StatusCode(), len(resp.Body()), resp.Body(), w.t.Size)
	}
	if err != nil {
		w.errors++
		if w.firstErr == nil {
			w.firstErr = err
		}
		return false
	}
	w.ok++
	return true
}
