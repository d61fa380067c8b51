// Command egress benches the node proxy's egress path (internal/requestpath/egress):
// the latency it adds at 64 connections over calling an OpenAI-compatible
// provider stand-in directly, and the delay to the first token of a
// streamed completion, each as a median over rounds with its range.
//
//	go run ./bench/egress            # 5 rounds of 3 s per path
//	go run ./bench/egress -smoke     # one short round, checked for shape
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"time"

	"github.com/sandgate/sandgate/bench/load"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/requestpath/egress"
)

// options shape one bench run.
type options struct {
	Rounds   int
	Duration time.Duration
	Warmup   time.Duration
	Conns    int
	Rate     float64
	Streams  int
}

func main() {
	o := options{}
	smoke := flag.Bool("smoke", false, "one short round of each figure, checked for shape, not speed")
	flag.IntVar(&o.Rounds, "rounds", 5, "rounds per figure; medians and ranges are over them")
	flag.DurationVar(&o.Duration, "duration", 3*time.Second, "measured time per load round")
	flag.DurationVar(&o.Warmup, "warmup", 500*time.Millisecond, "unmeasured time before each load round")
	flag.IntVar(&o.Conns, "conns", 64, "connections of the load")
	flag.Float64Var(&o.Rate, "rate", 1000, "requests per second over all connections, paced, so both paths are measured below saturation; 0 runs closed-loop")
	flag.IntVar(&o.Streams, "streams", 50, "streamed completions per round for the first-token delay")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	traceFile := flag.String("trace", "", "write a runtime trace of the whole run to this file")
	flag.Parse()
	if *smoke {
		o = options{Rounds: 1, Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond, Conns: 8, Rate: 500, Streams: 5}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	stopProfiles, err := profile(*cpuProfile, *traceFile)
	if err == nil {
		err = run(ctx, o, os.Stdout)
		stopProfiles()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench egress:", err)
		os.Exit(1)
	}
}

// profile starts a CPU profile and a runtime trace when their files are
// named; the returned func stops both.
func profile(cpuPath, tracePath string) (func(), error) {
	var stops []func()
	stopAll := func() {
		for _, s := range stops {
			s()
		}
	}
	if cpuPath != "" {
		f, err := os.Create(cpuPath)
		if err != nil {
			return nil, fmt.Errorf("create CPU profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("start CPU profile: %w", err)
		}
		stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
	}
	if tracePath != "" {
		f, err := os.Create(tracePath)
		if err != nil {
			stopAll()
			return nil, fmt.Errorf("create trace: %w", err)
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			stopAll()
			return nil, fmt.Errorf("start trace: %w", err)
		}
		stops = append(stops, func() { trace.Stop(); f.Close() })
	}
	return stopAll, nil
}

// benchCaller is the one sandbox of the bench: every loopback client is
// it, with no budget limit. Its one address stands for a node's
// sandboxes, so the per-sandbox connection cap is raised above the load's
// connections (benchConnsPerClient).
type benchCaller struct{}

func (benchCaller) ByIP(string) (informer.Caller, error) {
	return informer.Caller{User: "bench", Sandbox: "sb-bench", Pod: "sb-bench"}, nil
}

// run measures both paths and prints the figures.
func run(ctx context.Context, o options, out io.Writer) error {
	providerAddr, stopProvider, err := providerStandin(ctx)
	if err != nil {
		return err
	}
	defer stopProvider()
	egressAddr, stopEgress, err := startEgress(ctx, providerAddr)
	if err != nil {
		return err
	}
	defer stopEgress()

	direct := load.Target{Addr: providerAddr, Path: "/v1/models", Host: providerAddr, Size: len(modelsBody)}
	viaEgress := load.Target{Addr: egressAddr, Path: "/openai/models", Host: egressAddr, Size: len(modelsBody)}
	var f figures
	for range o.Rounds {
		for _, leg := range []struct {
			t    load.Target
			into *[]load.Result
		}{{direct, &f.direct}, {viaEgress, &f.egress}} {
			r := load.Run(ctx, load.Options{Target: leg.t, Conns: o.Conns, Rate: o.Rate, Warmup: o.Warmup, Duration: o.Duration})
			if r.Errors > 0 || r.Requests == 0 {
				return fmt.Errorf("load on %s: %d errors of %d (%s)", leg.t.Path, r.Errors, r.Total, r.FirstError)
			}
			*leg.into = append(*leg.into, r)
		}
		for _, leg := range []struct {
			url  string
			into *[]time.Duration
		}{{"http://" + providerAddr + "/v1/chat/completions", &f.firstDirect}, {"http://" + egressAddr + "/openai/chat/completions", &f.firstEgress}} {
			ds, err := firstTokens(ctx, leg.url, o.Streams)
			if err != nil {
				return err
			}
			*leg.into = append(*leg.into, load.Summarise(ds).P50)
		}
	}
	f.print(out, o)
	return nil
}

// benchConnsPerClient is the bench caller's connection cap: the most
// -conns a run may ask for, and the first-token client's.
const benchConnsPerClient = 4096

// startEgress runs the egress proxy in front of the stand-in, with a
// shared key in a temporary keys directory.
func startEgress(ctx context.Context, providerAddr string) (string, func(), error) {
	dir, err := os.MkdirTemp("", "sandgate-bench-egress-")
	if err != nil {
		return "", nil, fmt.Errorf("make keys directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "openai"), []byte("sk-bench-standin\n"), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("write key: %w", err)
	}
	providers, err := egress.ParseProviders([]byte(`[{"name":"openai","base_url":"http://` + providerAddr + `/v1"}]`))
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	p, err := egress.New(egress.Options{Providers: providers, KeysDir: dir, Callers: benchCaller{},
		MaxConnsPerClient: benchConnsPerClient, Audit: slog.New(slog.DiscardHandler)})
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("listen for egress: %w", err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Serve(sctx, ln)
	}()
	return ln.Addr().String(), func() { cancel(); <-done; os.RemoveAll(dir) }, nil
}

// figures are each round's results per path.
type figures struct {
	direct, egress           []load.Result
	firstDirect, firstEgress []time.Duration
}

// µs prints a spread of nanoseconds in microseconds.
func µs(s load.Spread) string {
	return fmt.Sprintf("%8.1f µs  [%.1f-%.1f]", s.Med/1e3, s.Min/1e3, s.Max/1e3)
}

func of[T any](xs []T, f func(T) float64) load.Spread {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	return load.SpreadOf(v)
}

func (f figures) print(w io.Writer, o options) {
	p50 := func(r load.Result) float64 { return float64(r.Latency.P50) }
	p99 := func(r load.Result) float64 { return float64(r.Latency.P99) }
	rps := func(r load.Result) float64 { return r.RPS }
	added := make([]float64, len(f.direct))
	for i := range f.direct {
		added[i] = float64(f.egress[i].Latency.P50 - f.direct[i].Latency.P50)
	}
	firstAdded := make([]float64, len(f.firstDirect))
	for i := range f.firstDirect {
		firstAdded[i] = float64(f.firstEgress[i] - f.firstDirect[i])
	}
	ns := func(d time.Duration) float64 { return float64(d) }
	fmt.Fprintf(w, "egress bench: %d rounds, %d connections at %.0f req/s (0: closed loop) for %v each, %d streamed completions per round (median [min-max] over rounds)\n",
		o.Rounds, o.Conns, o.Rate, o.Duration, o.Streams)
	fmt.Fprintf(w, "  direct  p50 %s  p99 %s  %8.0f req/s\n", µs(of(f.direct, p50)), µs(of(f.direct, p99)), of(f.direct, rps).Med)
	fmt.Fprintf(w, "  egress  p50 %s  p99 %s  %8.0f req/s\n", µs(of(f.egress, p50)), µs(of(f.egress, p99)), of(f.egress, rps).Med)
	fmt.Fprintf(w, "  added p50 latency          %s\n", µs(load.SpreadOf(added)))
	fmt.Fprintf(w, "  first token direct         %s\n", µs(of(f.firstDirect, ns)))
	fmt.Fprintf(w, "  first token via egress     %s\n", µs(of(f.firstEgress, ns)))
	fmt.Fprintf(w, "  added first-token delay    %s\n", µs(load.SpreadOf(firstAdded)))
}
