// Command bench measures sandgate against the physical limit of the
// machine it runs on and writes bench/RESULTS.md: the HTTP data path
// (direct to the app, through a node proxy, through a plain
// httputil.ReverseProxy), the cross-node hop, SSE and WebSocket overhead,
// session checks, the node proxy's caches at scale, and the lifecycle
// (signup, wake, suspend) on a real API server with the simulated cluster.
//
// Run it with `make bench`. The same binary runs every part of the
// measurement as a child process of its own (-role): the app, the proxies
// and the baseline share CPU 0 and the load generator has CPU 1 (taskset),
// so the load generator never steals the proxy's core.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// config is the orchestrator's flags and what smoke derives from them.
type config struct {
	out       string
	duration  time.Duration
	warmup    time.Duration
	wsIdle    int
	lifecycle bool
	profile   string
	// smoke runs every way briefly and checks the results' shape.
	smoke bool
	// pipeline is the output of the node proxy's BenchmarkPipeline, or "".
	pipeline string
	// traefik is the Traefik binary measured as way (e), or "".
	traefik string
	// rounds of every load cell; sseEvents per SSE stream; scaleUsers of
	// the scale table; growthPods of the growth table.
	rounds     int
	sseEvents  int
	scaleUsers []int
	growthPods []int
}

// full is the measurement make bench runs.
func (c config) full() config {
	c.rounds, c.sseEvents = 3, 300
	c.scaleUsers = []int{10_000, 100_000}
	c.growthPods = []int{1_000, 10_000, 100_000, 1_000_000}
	return c
}

// smoked runs each way for about a second, once, at small sizes; the
// lifecycle (a control plane and a minute of signups and wakes) is left
// to make bench.
func (c config) smoked() config {
	c.rounds, c.sseEvents = 1, 100
	c.duration, c.warmup = 800*time.Millisecond, 200*time.Millisecond
	c.wsIdle, c.lifecycle = 100, false
	c.scaleUsers = []int{1_000}
	c.growthPods = []int{1_000, 10_000}
	return c
}

// main runs one role, or orchestrates every measurement.
func main() {
	role := flag.String("role", "", "run one part of the bench (internal: the orchestrator starts these)")
	var c config
	flag.StringVar(&c.out, "out", "bench/RESULTS.md", "where to write the results")
	flag.DurationVar(&c.duration, "duration", 2*time.Second, "measured time of each HTTP load run")
	flag.DurationVar(&c.warmup, "warmup", 500*time.Millisecond, "unmeasured time before each HTTP load run")
	flag.IntVar(&c.wsIdle, "ws-idle", 10000, "idle WebSockets to bridge for the memory figure")
	flag.BoolVar(&c.lifecycle, "lifecycle", true, "measure signup, wake and suspend on a real API server")
	flag.StringVar(&c.profile, "profile", "bench/out", "directory for the proxy's CPU profile; empty skips profiling")
	flag.StringVar(&c.traefik, "traefik", "", "the Traefik binary to measure as way (e), a production proxy in front of the same app (make bench builds it from tools/traefik); empty leaves (e) out")
	flag.StringVar(&c.pipeline, "pipeline", "", "output of go test -bench Pipeline -benchmem -count N ./internal/requestpath/nodeproxy, reported beside the rest (make bench writes it)")
	var fc fleetConfig
	flag.StringVar(&fc.out, "fleet", "", "measure only the fleet of node proxies against one API server, and write its table here")
	flag.StringVar(&fc.sizes, "fleet-nodes", "10,50,200,500", "with -fleet: the node counts, comma-separated, increasing")
	flag.IntVar(&fc.users, "fleet-users", 10000, "with -fleet: the accounts the API server holds")
	flag.IntVar(&fc.changes, "fleet-changes", 50, "with -fleet: the changes of each kind measured at each node count")
	flag.StringVar(&fc.churn, "fleet-churn", "signups=1,logouts=2,suspends=5,wakes=5", "with -fleet: the background changes per second of each kind under which the churned reaches are measured")
	flag.BoolVar(&c.smoke, "smoke", false, "run every way for about a second and check the results' shape, not speed; writes -out only when given")
	flag.Parse()
	if c.smoke {
		given := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { given[f.Name] = true })
		if !given["out"] {
			c.out = ""
		}
		if !given["profile"] {
			c.profile = filepath.Join(os.TempDir(), "sandgate-bench-smoke")
		}
		c = c.smoked()
	} else {
		c = c.full()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var err error
	switch {
	case fc.out != "":
		err = runFleet(ctx, fc, log)
	case *role != "":
		var spec string
		if spec, err = readSpec(); err == nil {
			err = runRole(ctx, *role, spec)
		}
	default:
		err = orchestrate(ctx, c, log)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench %s: %v\n", *role, err)
		os.Exit(1)
	}
}
