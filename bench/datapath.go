package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/sandgate/sandgate/bench/load"
	"github.com/sandgate/sandgate/bench/node"
	"github.com/sandgate/sandgate/bench/origin"
	"github.com/sandgate/sandgate/bench/procstat"
)

// host is the Host header of every request.
const host = "gateway.example"

// servers are the data path's running servers in front of one app.
type servers struct {
	app                            app
	appProc, baseline, bare        *child
	traefik                        *child // way (e), when the bench was given Traefik
	proxy, peer, crowd             *child // n1's proxy (clients enter here), n2's, n1's for the many-users run
	wide                           *child // n1's proxy at GOMAXPROCS=2, in the split layout only
	appAddr, baseAddr, bareAddr    string
	proxyAddr, peerAddr, crowdAddr string
	wideAddr, traefikAddr          string
	proxyDebug, peerDebug          string
	bareDebug                      string
	cookies                        map[string]string // user -> Cookie header
	crowdCookies                   []load.Session    // paths are /u/<user>
}

// startServers starts a's app, n2's proxy, n1's proxy (hopping to n2 for
// bob), n1's many-users proxy, the baseline, the bare proxy and, when
// traefik names its binary, Traefik, all on serverCPU.
func startServers(keys *node.Keys, a app, traefik string) (*servers, error) {
	s := &servers{app: a, cookies: map[string]string{}}
	for _, u := range users {
		tok, err := keys.Session(u)
		if err != nil {
			return nil, err
		}
		s.cookies[u] = "dsh_gw_session=" + tok
	}
	for i := range crowdSessions {
		u := crowdUser(i % crowdSandboxes)
		tok, err := keys.Session(u)
		if err != nil {
			return nil, err
		}
		s.crowdCookies = append(s.crowdCookies, load.Session{Path: "/u/" + u, Cookie: "dsh_gw_session=" + tok})
	}
	var err error
	var out served
	if s.appProc, err = startServer(a.Role, nil, &out); err != nil {
		return s, err
	}
	s.appAddr = out.Addr
	if s.peer, err = startServer("proxy", proxySpec{Node: 1, App: s.appAddr, JWKS: keys.JWKS}, &out); err != nil {
		return s, err
	}
	s.peerAddr, s.peerDebug = out.Addr, out.Debug
	_, port, _ := net.SplitHostPort(s.peerAddr)
	peerPort, _ := strconv.Atoi(port)
	if s.proxy, err = startServer("proxy", proxySpec{Node: 0, App: s.appAddr, PeerPort: peerPort, JWKS: keys.JWKS}, &out); err != nil {
		return s, err
	}
	s.proxyAddr, s.proxyDebug = out.Addr, out.Debug
	if s.crowd, err = startServer("proxy", proxySpec{Node: 0, App: s.appAddr, PeerPort: peerPort, JWKS: keys.JWKS, Crowd: crowdSandboxes}, &out); err != nil {
		return s, err
	}
	s.crowdAddr = out.Addr
	if s.baseline, err = startServer("baseline", s.appAddr, &out); err != nil {
		return s, err
	}
	s.baseAddr = out.Addr
	if s.bare, err = startServer("bare", s.appAddr, &out); err != nil {
		return s, err
	}
	s.bareAddr, s.bareDebug = out.Addr, out.Debug
	if traefik == "" {
		return s, nil
	}
	if s.traefik, err = startServer("traefik", traefikSpec{Binary: traefik, App: s.appAddr, Probe: a.path(a.Sizes[0])}, &out); err != nil {
		return s, err
	}
	s.traefikAddr = out.Addr
	return s, nil
}

// startServer starts role on serverCPU and reads where it listens.
func startServer(role string, spec any, out *served) (*child, error) {
	return startServerOn(role, spec, serverCPU, out)
}

// startServerOn starts role on cpu and reads where it listens.
func startServerOn(role string, spec any, cpu int, out *served) (*child, error) {
	c, err := spawn(role, spec, cpu)
	if err != nil {
		return nil, err
	}
	if err := c.read(out); err != nil {
		return nil, err
	}
	c.served = out.Pid
	return c, nil
}

// procs are the running server processes by the role name their CPU
// time is reported under.
func (s *servers) procs() map[string]*child {
	m := map[string]*child{}
	for name, c := range map[string]*child{"app": s.appProc, "proxy": s.proxy, "peer": s.peer, "crowd": s.crowd, "baseline": s.baseline, "bare": s.bare, "wide": s.wide, "traefik": s.traefik} {
		if c != nil {
			m[name] = c
		}
	}
	return m
}

// stop ends every server.
func (s *servers) stop() {
	for _, c := range []*child{s.traefik, s.bare, s.baseline, s.crowd, s.wide, s.proxy, s.peer, s.appProc} {
		if c != nil {
			_ = c.stop()
		}
	}
}

// way is one way to the app.
type way string

// The ways to the app: (a)-(e), the hop and the many-users run.
const (
	direct     way = "direct"
	viaProxy   way = "proxy"
	viaBase    way = "baseline"
	viaBare    way = "bare"
	viaTraefik way = "traefik"
	viaHop     way = "hop"
	viaCrowd   way = "many users"
	viaWide    way = "proxy, GOMAXPROCS=2"
	userLocal      = "alice"
	userHop        = "bob"
)

// servedBy are the server processes a request by each way goes through.
var servedBy = map[way][]string{
	direct: {"app"}, viaProxy: {"proxy", "app"}, viaBase: {"baseline", "app"}, viaBare: {"bare", "app"}, viaTraefik: {"traefik", "app"},
	viaHop: {"proxy", "peer", "app"}, viaCrowd: {"crowd", "app"}, viaWide: {"wide", "app"},
}

// target returns how to reach path on the app by w.
func (s *servers) target(w way, path string) load.Target {
	switch w {
	case viaProxy:
		return load.Target{Addr: s.proxyAddr, Path: "/u/" + userLocal + path, Host: host, Cookie: s.cookies[userLocal]}
	case viaHop:
		return load.Target{Addr: s.proxyAddr, Path: "/u/" + userHop + path, Host: host, Cookie: s.cookies[userHop]}
	case viaWide:
		return load.Target{Addr: s.wideAddr, Path: "/u/" + userLocal + path, Host: host, Cookie: s.cookies[userLocal]}
	case viaBase:
		return load.Target{Addr: s.baseAddr, Path: "/u/" + userLocal + path, Host: host}
	case viaBare:
		return load.Target{Addr: s.bareAddr, Path: "/u/" + userLocal + path, Host: host}
	case viaTraefik:
		return load.Target{Addr: s.traefikAddr, Path: "/u/" + userLocal + path, Host: host}
	case viaCrowd:
		t := load.Target{Addr: s.crowdAddr, Host: host}
		for _, c := range s.crowdCookies {
			t.Sessions = append(t.Sessions, load.Session{Path: c.Path + path, Cookie: c.Cookie})
		}
		return t
	}
	return load.Target{Addr: s.appAddr, Path: path, Host: host}
}

// httpRun is one load run's setting and outcome.
type httpRun struct {
	App string `json:"app"`
	cell
	Rate   float64     `json:"rate,omitempty"`
	Result load.Result `json:"result"`
	// CPU is each server's CPU time per request (warm-up included), by
	// role: app, proxy (n1), peer (n2), crowd, baseline, bare.
	CPU map[string]time.Duration `json:"cpu"`
	// Syscalls is each server's read and write system calls per request
	// (warm-up included), by role as CPU.
	Syscalls map[string]float64 `json:"syscalls"`
	// Stall is the share of the run's wall time in which some task on
	// the machine waited for a CPU (/proc/pressure/cpu): other work's
	// noise; -1 when the kernel does not report it.
	Stall float64 `json:"stall"`
	// Logged is what n1's proxy logged per request over the run (warm-up
	// included), on the ways through it; nil on the others.
	Logged *perRequest `json:"logged,omitempty"`
}

// perRequest is log output per request.
type perRequest struct {
	Lines, Bytes float64
}

// runHTTP runs one load run of c from clientCPU.
func (s *servers) runHTTP(cfg config, c cell, rate float64) (httpRun, error) {
	t := s.target(c.Way, s.app.path(c.Size))
	t.Size = c.Size
	r := httpRun{App: s.app.Name, cell: c, Rate: rate}
	procs := s.procs()
	before := map[string]time.Duration{}
	calls0 := map[string]int64{}
	for name, p := range procs {
		before[name], _ = procstat.CPU(p.pid())
		calls0[name], _ = procstat.Syscalls(p.pid())
	}
	logged0, lerr := s.logCount(c.Way)
	stall0, serr := procstat.CPUStall()
	start := time.Now()
	err := once("http", httpSpec{Load: load.Options{Target: t, Conns: c.Conns, Rate: rate, Warmup: cfg.warmup, Duration: cfg.duration}}, clientCPU, &r.Result)
	r.Stall = -1
	if stall1, err := procstat.CPUStall(); err == nil && serr == nil {
		r.Stall = float64(stall1-stall0) / float64(time.Since(start))
	}
	if logged1, err := s.logCount(c.Way); err == nil && lerr == nil && logged0 != nil && r.Result.Total > 0 {
		n := float64(r.Result.Total)
		r.Logged = &perRequest{Lines: float64(logged1.Lines-logged0.Lines) / n, Bytes: float64(logged1.Bytes-logged0.Bytes) / n}
	}
	r.CPU, r.Syscalls = map[string]time.Duration{}, map[string]float64{}
	for name, p := range procs {
		if r.Result.Total == 0 {
			break
		}
		if after, cerr := procstat.CPU(p.pid()); cerr == nil {
			r.CPU[name] = (after - before[name]) / time.Duration(r.Result.Total)
		}
		if calls, cerr := procstat.Syscalls(p.pid()); cerr == nil {
			r.Syscalls[name] = float64(calls-calls0[name]) / float64(r.Result.Total)
		}
	}
	if err == nil && r.Result.Errors > 0 {
		err = fmt.Errorf("%s %s %dB x%d: %d errors, first: %s", s.app.Name, c.Way, c.Size, c.Conns, r.Result.Errors, r.Result.FirstError)
	}
	return r, err
}

// logCount reads what n1's proxy has logged so far, on the ways through
// it; nil on the others.
func (s *servers) logCount(w way) (*logCount, error) {
	if w != viaProxy && w != viaHop {
		return nil, nil
	}
	resp, err := http.Get("http://" + s.proxyDebug + "/logs")
	if err != nil {
		return nil, fmt.Errorf("proxy log count: %w", err)
	}
	defer resp.Body.Close()
	var c logCount
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		return nil, fmt.Errorf("decode proxy log count: %w", err)
	}
	return &c, nil
}

// dataPath runs the app's cells in interleaved rounds, then, for the
// fasthttp app, the half-load latency pair.
func dataPath(ctx context.Context, cfg config, s *servers, res *results, log *slog.Logger) error {
	// Rounds interleave so that a burst of other work on the machine
	// hits every way alike; the report takes each cell's median.
	for round := range cfg.rounds {
		for _, c := range plan(s.app, cfg) {
			if err := ctx.Err(); err != nil {
				return err
			}
			r, err := s.runHTTP(cfg, c, 0)
			if err != nil {
				return err
			}
			log.Info("http", "app", s.app.Name, "round", round, "way", c.Way, "size", c.Size, "conns", c.Conns, "rps", int(r.Result.RPS), "p99", r.Result.Latency.P99)
			res.HTTP = append(res.HTTP, r)
		}
	}
	if s.app.Name != fastApp.Name {
		return nil
	}
	peak := res.runs(fastApp, cell{viaProxy, 1 << 10, 64}).rps().Med
	for round := range cfg.rounds {
		for _, w := range []way{direct, viaProxy} {
			r, err := s.runHTTP(cfg, cell{w, 1 << 10, 64}, peak/2)
			if err != nil {
				return err
			}
			log.Info("half load", "round", round, "way", w, "rate", int(peak/2), "rps", int(r.Result.RPS), "p99", r.Result.Latency.P99)
			res.Half = append(res.Half, r)
		}
	}
	return nil
}

// streams measures SSE delay and WebSocket echo, direct and through the
// proxy, then the proxy's memory per idle bridged WebSocket.
func streams(ctx context.Context, c config, s *servers, res *results, log *slog.Logger) error {
	for _, w := range []way{direct, viaProxy} {
		t := s.target(w, fmt.Sprintf("%s?n=%d&every=5", origin.EventsPath, c.sseEvents))
		var l load.Latency
		if err := once("sse", streamSpec{URL: "http://" + t.Addr + t.Path, Host: host, Cookie: t.Cookie}, clientCPU, &l); err != nil {
			return err
		}
		res.SSE = append(res.SSE, wayLatency{Way: w, Latency: l})
		t = s.target(w, origin.WSPath)
		if err := once("wsecho", streamSpec{URL: "ws://" + t.Addr + t.Path, Host: host, Cookie: t.Cookie, N: echoMessages, Size: 64}, clientCPU, &l); err != nil {
			return err
		}
		res.WSEcho = append(res.WSEcho, wayLatency{Way: w, Latency: l})
		log.Info("streams", "way", w, "ws_p99", l.P99)
	}
	return idleSockets(ctx, c, s, res, log)
}

// echoMessages is how many messages the WebSocket echo sends.
const echoMessages = 3000

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
