package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/sandgate/sandgate/bench/load"
	"github.com/sandgate/sandgate/bench/node"
	"github.com/sandgate/sandgate/bench/origin"
	"github.com/sandgate/sandgate/bench/procstat"
)

// host is the Host header of every request.
const host = "gateway.example"

// servers are the data path's running servers.
type servers struct {
	app, baseline *child
	proxy, peer   *child // n1's proxy (clients enter here) and n2's
	appAddr       string
	baseAddr      string
	proxyAddr     string
	peerAddr      string
	proxyDebug    string
	cookies       map[string]string // user -> Cookie header
}

// startServers starts the app, n2's proxy, n1's proxy (hopping to n2 for
// bob) and the baseline, all on serverCPU.
func startServers(keys *node.Keys) (*servers, error) {
	s := &servers{cookies: map[string]string{}}
	for _, u := range users {
		tok, err := keys.Session(u)
		if err != nil {
			return nil, err
		}
		s.cookies[u] = "dsh_gw_session=" + tok
	}
	var err error
	var out served
	if s.app, err = startServer("app", nil, &out); err != nil {
		return s, err
	}
	s.appAddr = out.Addr
	if s.peer, err = startServer("proxy", proxySpec{Node: 1, App: s.appAddr, JWKS: keys.JWKS}, &out); err != nil {
		return s, err
	}
	s.peerAddr = out.Addr
	_, port, _ := net.SplitHostPort(s.peerAddr)
	var peerPort int
	fmt.Sscan(port, &peerPort)
	if s.proxy, err = startServer("proxy", proxySpec{Node: 0, App: s.appAddr, PeerPort: peerPort, JWKS: keys.JWKS}, &out); err != nil {
		return s, err
	}
	s.proxyAddr, s.proxyDebug = out.Addr, out.Debug
	if s.baseline, err = startServer("baseline", s.appAddr, &out); err != nil {
		return s, err
	}
	s.baseAddr = out.Addr
	return s, nil
}

// startServer starts role on serverCPU and reads where it listens.
func startServer(role string, spec any, out *served) (*child, error) {
	c, err := spawn(role, spec, serverCPU)
	if err != nil {
		return nil, err
	}
	if err := c.read(out); err != nil {
		return nil, err
	}
	return c, nil
}

// stop ends every server.
func (s *servers) stop() {
	for _, c := range []*child{s.baseline, s.proxy, s.peer, s.app} {
		if c != nil {
			_ = c.stop()
		}
	}
}

// way is one way to the app.
type way string

// The ways to the app: (a), (b), (c) and the hop.
const (
	direct    way = "direct"
	viaProxy  way = "proxy"
	viaBase   way = "baseline"
	viaHop    way = "hop"
	userLocal     = "alice"
	userHop       = "bob"
)

// target returns how to reach path on the app by w.
func (s *servers) target(w way, path string) load.Target {
	switch w {
	case viaProxy:
		return load.Target{Addr: s.proxyAddr, Path: "/u/" + userLocal + path, Host: host, Cookie: s.cookies[userLocal]}
	case viaHop:
		return load.Target{Addr: s.proxyAddr, Path: "/u/" + userHop + path, Host: host, Cookie: s.cookies[userHop]}
	case viaBase:
		return load.Target{Addr: s.baseAddr, Path: "/u/" + userLocal + path, Host: host}
	}
	return load.Target{Addr: s.appAddr, Path: path, Host: host}
}

// httpRun is one load run's setting and outcome.
type httpRun struct {
	Way    way         `json:"way"`
	Size   int         `json:"size"`
	Conns  int         `json:"conns"`
	Rate   float64     `json:"rate,omitempty"`
	Result load.Result `json:"result"`
	// CPU is each server's CPU time per request (warm-up included), by
	// role: app, proxy (n1), peer (n2), baseline.
	CPU map[string]time.Duration `json:"cpu"`
}

// runHTTP runs one load run from clientCPU.
func (s *servers) runHTTP(c config, w way, size, conns int, rate float64) (httpRun, error) {
	t := s.target(w, fmt.Sprintf("%s%d", origin.BytesPath, size))
	t.Size = size
	r := httpRun{Way: w, Size: size, Conns: conns, Rate: rate}
	procs := map[string]*child{"app": s.app, "proxy": s.proxy, "peer": s.peer, "baseline": s.baseline}
	before := map[string]time.Duration{}
	for name, c := range procs {
		before[name], _ = procstat.CPU(c.pid())
	}
	err := once("http", httpSpec{Load: load.Options{Target: t, Conns: conns, Rate: rate, Warmup: c.warmup, Duration: c.duration}}, clientCPU, &r.Result)
	r.CPU = map[string]time.Duration{}
	for name, c := range procs {
		if after, cerr := procstat.CPU(c.pid()); cerr == nil && r.Result.Total > 0 {
			r.CPU[name] = (after - before[name]) / time.Duration(r.Result.Total)
		}
	}
	if err == nil && r.Result.Errors > 0 {
		err = fmt.Errorf("%s %dB x%d: %d errors, first: %s", w, size, conns, r.Result.Errors, r.Result.FirstError)
	}
	return r, err
}

// dataPath runs the request matrix, the hop, and the half-load latency.
func dataPath(ctx context.Context, c config, s *servers, res *results, log *slog.Logger) error {
	// Every cell runs in matrixRounds interleaved rounds; the report takes
	// each cell's best round, the one least disturbed by other work.
	for round := range matrixRounds {
		for _, size := range []int{1 << 10, 64 << 10} {
			for _, conns := range []int{1, 16, 64} {
				for _, w := range []way{direct, viaProxy, viaBase} {
					if err := ctx.Err(); err != nil {
						return err
					}
					r, err := s.runHTTP(c, w, size, conns, 0)
					if err != nil {
						return err
					}
					log.Info("http", "round", round, "way", w, "size", size, "conns", conns, "rps", int(r.Result.RPS), "p99", r.Result.Latency.P99)
					res.HTTP = append(res.HTTP, r)
				}
			}
		}
		for _, tc := range []struct{ size, conns int }{{1 << 10, 1}, {1 << 10, 64}, {64 << 10, 64}} {
			r, err := s.runHTTP(c, viaHop, tc.size, tc.conns, 0)
			if err != nil {
				return err
			}
			log.Info("http", "round", round, "way", viaHop, "size", tc.size, "conns", tc.conns, "rps", int(r.Result.RPS))
			res.HTTP = append(res.HTTP, r)
		}
	}
	// The half-load pair runs in alternating rounds so that a burst of
	// other work on the machine hits both ways alike.
	peak := res.find(viaProxy, 1<<10, 64).Result.RPS
	for round := range halfRounds {
		for _, w := range []way{direct, viaProxy} {
			r, err := s.runHTTP(c, w, 1<<10, 64, peak/2)
			if err != nil {
				return err
			}
			log.Info("half load", "round", round, "way", w, "rate", int(peak/2), "rps", int(r.Result.RPS), "p99", r.Result.Latency.P99)
			res.Half = append(res.Half, r)
		}
	}
	return nil
}

// matrixRounds is how many rounds of the closed-loop matrix run.
const matrixRounds = 2

// halfRounds is how many rounds of the half-load pair run; the report
// takes each way's median p99.
const halfRounds = 3

// streams measures SSE delay and WebSocket echo, direct and through the
// proxy, then the proxy's memory per idle bridged WebSocket.
func streams(ctx context.Context, c config, s *servers, res *results, log *slog.Logger) error {
	for _, w := range []way{direct, viaProxy} {
		t := s.target(w, fmt.Sprintf("%s?n=300&every=5", origin.EventsPath))
		var l load.Latency
		if err := once("sse", streamSpec{URL: "http://" + t.Addr + t.Path, Host: host, Cookie: t.Cookie}, clientCPU, &l); err != nil {
			return err
		}
		res.SSE = append(res.SSE, wayLatency{Way: w, Latency: l})
		t = s.target(w, origin.WSPath)
		if err := once("wsecho", streamSpec{URL: "ws://" + t.Addr + t.Path, Host: host, Cookie: t.Cookie, N: 3000, Size: 64}, clientCPU, &l); err != nil {
			return err
		}
		res.WSEcho = append(res.WSEcho, wayLatency{Way: w, Latency: l})
		log.Info("streams", "way", w, "ws_p99", l.P99)
	}
	return idleSockets(ctx, c, s, res, log)
}

// awaitBridgesEnd waits up to 10s until the proxy runs no more than
// goroutines+16 goroutines, i.e. the clients' closed WebSockets are torn
// down, so the proxy is not shut down while bridges are still ending.
func (s *servers) awaitBridgesEnd(goroutines int) {
	for range 100 {
		if m, err := s.proxyMem(); err != nil || m.Goroutines <= goroutines+16 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wayLatency is a latency by one way.
type wayLatency struct {
	Way     way          `json:"way"`
	Latency load.Latency `json:"latency"`
}

// idleSockets opens c.wsIdle WebSockets through the proxy and reads how
// much the proxy's RSS grew per socket.
func idleSockets(_ context.Context, c config, s *servers, res *results, log *slog.Logger) error {
	before, err := s.proxyMem()
	if err != nil {
		return err
	}
	t := s.target(viaProxy, origin.WSPath)
	t0 := time.Now()
	ws, err := spawn("wsidle", streamSpec{URL: "ws://" + t.Addr + t.Path, Host: host, Cookie: t.Cookie, N: c.wsIdle}, clientCPU)
	if err != nil {
		return err
	}
	defer func() {
		ws.stop()
		s.awaitBridgesEnd(before.Goroutines)
	}()
	var open idleOpen
	if err := ws.read(&open); err != nil {
		return err
	}
	opening := time.Since(t0)
	time.Sleep(2 * time.Second) // let the bridges settle
	after, err := s.proxyMem()
	if err != nil {
		return err
	}
	res.Idle = idleResult{Wanted: c.wsIdle, Open: open.Open, Err: open.Err, Before: before, After: after, Opening: opening}
	log.Info("idle websockets", "open", open.Open, "took", opening, "rss_before", before.RSS, "rss_after", after.RSS)
	if c.profile != "" {
		if res.IdleHeap, err = saveProfile(s, c.profile, "proxy-ws-heap.pprof", "/heap", "-sample_index=inuse_space", "-nodecount=15"); err != nil {
			log.Warn("heap profile", "err", err)
		}
	}
	return nil
}
