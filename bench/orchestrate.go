package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"github.com/sandgate/sandgate/bench/lifecycle"
	"github.com/sandgate/sandgate/bench/node"
	"github.com/sandgate/sandgate/bench/procstat"
	"github.com/sandgate/sandgate/bench/scale"
)

// results is everything the bench measured.
type results struct {
	Started time.Time
	Took    time.Duration
	HTTP    []httpRun
	Hop     []httpRun
	Half    []httpRun
	// HalfTrace is the traced half-load run of the split layout's
	// pinned proxy, and HalfProfile its CPU profile at that rate; nil
	// and empty when not profiled.
	HalfTrace   *halfTrace
	HalfProfile string
	// SplitPeak and HalfSplit are the half-load pair in the split
	// layout (halfsplit.go): (b)'s peak there, then the rounds.
	SplitPeak, HalfSplit []httpRun
	SSE                  []wayLatency
	WSEcho               []wayLatency
	Idle                 idleResult
	// IdleLimit, when set, says why fewer idle WebSockets were opened
	// than asked for.
	IdleLimit string
	// IdleHeap is the proxy's heap profile summary with the idle
	// WebSockets open.
	IdleHeap string
	Sessions sessionFigures
	Scale    []scale.Result
	// Growth is the scale measurement with every pod on the proxy's node.
	Growth []scale.Result
	// Lifecycle is nil when skipped; LifecycleErr says why it failed.
	Lifecycle    *lifecycle.Result
	LifecycleErr string
	// Profile is the proxy's CPU profile summary (pprof -top), and
	// BareProfile the bare proxy's (d) in the same cell; Gap sets the
	// two apart per request.
	Profile, BareProfile string
	Gap                  *cpuGap
	// HopProfiles are n1's and n2's CPU profile summaries in the hop
	// cell at 64 connections, 1 KiB.
	HopProfiles []string
	// Pipeline is the node proxy's BenchmarkPipeline; nil without
	// -pipeline.
	Pipeline []pipelineStage
}

// proxyMemory is the proxy process's memory at one moment.
type proxyMemory struct {
	RSS int64 `json:"rss"`
	memStats
}

// idleResult is the idle WebSocket measurement.
type idleResult struct {
	Wanted, Open  int
	Err           string
	Before, After proxyMemory
	// Opening is how long opening them took.
	Opening time.Duration
}

// orchestrate runs every measurement and writes the results.
func orchestrate(ctx context.Context, c config, log *slog.Logger) error {
	res := &results{Started: time.Now()}
	if c.pipeline != "" {
		stages, err := readPipeline(c.pipeline)
		if err != nil {
			return err
		}
		res.Pipeline = stages
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return fmt.Errorf("taskset is needed to pin the load generator: %w", err)
	}
	c.wsIdle, res.IdleLimit = fitSockets(c.wsIdle, log)
	keys, err := node.NewKeys()
	if err != nil {
		return err
	}
	for _, a := range apps {
		if err := measureApp(ctx, c, keys, a, res, log); err != nil {
			return err
		}
	}

	log.Info("sessions")
	if err := once("sessions", nil, clientCPU, &res.Sessions); err != nil {
		return err
	}
	for _, n := range c.scaleUsers {
		log.Info("scale", "users", n)
		var r scale.Result
		if err := once("scale", scale.Options{Users: n, Nodes: scale.Nodes, JWKS: keys.JWKS}, serverCPU, &r); err != nil {
			return err
		}
		res.Scale = append(res.Scale, r)
	}
	for _, n := range c.growthPods {
		log.Info("growth", "pods", n)
		var r scale.Result
		if err := once("scale", scale.Options{Users: n, Nodes: 1, JWKS: keys.JWKS}, serverCPU, &r); err != nil {
			return err
		}
		res.Growth = append(res.Growth, r)
	}
	if c.lifecycle {
		log.Info("lifecycle: control plane, simulated cluster, 100 signups, suspend, wake")
		var r lifecycle.Result
		if err := once("lifecycle", nil, -1, &r); err != nil {
			res.LifecycleErr = err.Error()
			log.Error("lifecycle", "err", err)
		} else {
			res.Lifecycle = &r
		}
	}
	res.Took = time.Since(res.Started)
	report := render(c, res)
	if c.out != "" {
		if err := os.WriteFile(c.out, []byte(report), 0o644); err != nil {
			return fmt.Errorf("write results: %w", err)
		}
		log.Info("wrote "+c.out, "took", res.Took.Round(time.Second))
	}
	if err := checkShape(c, res, report); err != nil {
		return err
	}
	log.Info("every figure present", "took", res.Took.Round(time.Second))
	return nil
}

// measureApp measures every way to a, and for the fasthttp app also the
// proxy's profile and the streams.
func measureApp(ctx context.Context, c config, keys *node.Keys, a app, res *results, log *slog.Logger) error {
	s, err := startServers(keys, a, c.traefik)
	if s != nil {
		defer s.stop()
	}
	if err != nil {
		return err
	}
	if err := dataPath(ctx, c, s, res, log); err != nil {
		return err
	}
	if a.Name != fastApp.Name {
		return nil
	}
	if err := halfSplit(ctx, c, keys, s, res, log); err != nil {
		return err
	}
	if c.profile != "" {
		log.Info("profile the proxy")
		if res.Profile, res.BareProfile, res.Gap, err = profileGap(c, s); err != nil {
			log.Warn("profile", "err", err)
		}
		log.Info("profile both proxies of the hop")
		if res.HopProfiles, err = profileHop(c, s); err != nil {
			log.Warn("hop profile", "err", err)
		}
	}
	log.Info("streams")
	return streams(ctx, c, s, res, log)
}

// fitSockets raises the open file limit, which children inherit, so
// that the proxy can hold want bridged WebSockets (two descriptors each),
// and returns how many fit and, when fewer than want, why.
func fitSockets(want int, log *slog.Logger) (int, string) {
	// spare covers listeners, the debug port, idle upstream connections
	// left from the load runs and the runtime's own descriptors.
	const spare = 256
	need := uint64(2*want + spare)
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return want, ""
	}
	if lim.Max >= need {
		lim.Cur = lim.Max
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
			log.Warn("cannot raise the open file limit", "err", err)
		}
		return want, ""
	}
	err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: need, Max: need})
	if err == nil {
		return want, ""
	}
	log.Warn("cannot raise the open file limit's maximum", "max", lim.Max, "err", err)
	lim.Cur = lim.Max
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		log.Warn("cannot raise the open file limit", "err", err)
	}
	fit := min(want, int((lim.Max-spare)/2))
	return fit, fmt.Sprintf("RLIMIT_NOFILE is at most %d here and raising it failed (%v), so %d bridged WebSockets (2 descriptors each in the proxy) is the most that fits", lim.Max, err, fit)
}

// saveProfile fetches a profile from the proxy's debug port into dir/name
// and returns pprof's top table of it with extra arguments.
func saveProfile(s *servers, dir, name, path string, args ...string) (string, error) {
	file, err := fetchDebug(s.proxyDebug, dir, name, path)
	if err != nil {
		return "", err
	}
	return pprofTop(file, args...)
}

// fetchDebug saves what the debug port at debug answers on path as
// dir/name and returns the file's path.
func fetchDebug(debug, dir, name, path string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("make profile directory: %w", err)
	}
	file := filepath.Join(dir, name)
	resp, err := http.Get("http://" + debug + path)
	if err != nil {
		return "", fmt.Errorf("fetch %s: %w", name, err)
	}
	defer resp.Body.Close()
	f, err := os.Create(file)
	if err != nil {
		return "", fmt.Errorf("create %s: %w", name, err)
	}
	if _, err := f.ReadFrom(resp.Body); err != nil {
		f.Close()
		return "", fmt.Errorf("save %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("save %s: %w", name, err)
	}
	return file, nil
}

// pprofTop runs go tool pprof -top with args on this binary's profile.
func pprofTop(file string, args ...string) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find own binary: %w", err)
	}
	out, err := exec.Command("go", append(append([]string{"tool", "pprof", "-top"}, args...), self, file)...).Output()
	if err != nil {
		return "", fmt.Errorf("pprof -top: %w", err)
	}
	return string(out), nil
}

// stageNodes are the profile nodes that show where the proxy's time goes
// by stage: nodeproxy's functions, the kernel calls, the access log's
// slog call, the clock, allocation and the JWT and informer lookups.
const stageNodes = `nodeproxy|slog\.\(\*Logger\)\.LogAttrs|^time\.Now$|Syscall6|gcBgMarkWorker|^runtime\.mallocgc$|jwt|informer`

// proxyMem reads the n1 proxy's RSS and Go memory figures.
func (s *servers) proxyMem() (proxyMemory, error) {
	var m proxyMemory
	rss, err := procstat.RSS(s.proxy.pid())
	if err != nil {
		return m, err
	}
	m.RSS = rss
	resp, err := http.Get("http://" + s.proxyDebug + "/stats")
	if err != nil {
		return m, fmt.Errorf("proxy stats: %w", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&m.memStats); err != nil {
		return m, fmt.Errorf("decode proxy stats: %w", err)
	}
	return m, nil
}

// profileProxy records the proxy's CPU profile under 64 connections of
// 1 KiB requests at rate (0: closed loop) into the profile directory as
// name, and returns pprof's top functions, then by stage.
func profileProxy(c config, s *servers, rate float64, name string) (string, error) {
	tops, _, err := profileDuring(c, s, cell{viaProxy, 1 << 10, 64}, rate, map[string]string{s.proxyDebug: name})
	return tops[name], err
}

// profileHop records the CPU profiles of both proxies of the hop, n1's and
// n2's, under 64 connections of 1 KiB requests, and returns pprof's top
// functions of each, then by stage.
func profileHop(c config, s *servers) ([]string, error) {
	names := []string{"hop-n1-cpu.pprof", "hop-n2-cpu.pprof"}
	tops, _, err := profileDuring(c, s, cell{viaHop, 1 << 10, 64}, 0, map[string]string{s.proxyDebug: names[0], s.peerDebug: names[1]})
	return []string{tops[names[0]], tops[names[1]]}, err
}

// profileDuring records the CPU profile of each debug port in names (the
// file each is saved as) at once while cl runs at rate, and returns
// pprof's top functions of each, then by stage, by file name, and the
// profiled run.
func profileDuring(c config, s *servers, cl cell, rate float64, names map[string]string) (map[string]string, httpRun, error) {
	secs := int(c.duration.Seconds()) + 1
	pc := c
	pc.duration = time.Duration(secs+1) * time.Second
	files := map[string]string{}
	var mu sync.Mutex
	run, err := during(pc, s, cl, rate, func() error {
		var g errgroup.Group
		for debug, name := range names {
			g.Go(func() error {
				file, err := fetchDebug(debug, c.profile, name, fmt.Sprintf("/profile?seconds=%d", secs))
				mu.Lock()
				files[name] = file
				mu.Unlock()
				return err
			})
		}
		return g.Wait()
	})
	tops := map[string]string{}
	if err != nil {
		return tops, run, err
	}
	for name, file := range files {
		top, err := pprofTop(file, "-nodecount=20")
		if err != nil {
			return tops, run, err
		}
		stages, err := pprofTop(file, "-cum", "-nodecount=30", "-show="+stageNodes)
		if err != nil {
			return tops, run, err
		}
		tops[name] = top + "\nBy stage (-cum, only nodeproxy, syscalls, slog, time.Now, malloc, jwt, informer):\n\n" + stages
	}
	return tops, run, nil
}

// during runs cell c at rate (0: closed loop) and, once its warm-up is
// over, capture beside it.
func during(c config, s *servers, cl cell, rate float64, capture func() error) (httpRun, error) {
	type ran struct {
		r   httpRun
		err error
	}
	done := make(chan ran, 1)
	go func() {
		r, err := s.runHTTP(c, cl, rate)
		done <- ran{r, err}
	}()
	time.Sleep(c.warmup)
	err := capture()
	out := <-done
	if out.err != nil {
		return out.r, out.err
	}
	return out.r, err
}
