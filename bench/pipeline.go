package main

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// pipelineStage is one sub-benchmark of the node proxy's BenchmarkPipeline
// (internal/requestpath/nodeproxy), over the runs of go test -count.
type pipelineStage struct {
	Name      string
	NsPerOp   spread
	AllocsMed float64
	BytesMed  float64
}

// pipelineAllocBudget is the allocations per plain proxied request the
// pipeline may make above the bare fasthttp proxy's: the budget
// BenchmarkPipeline states (allocBudget there).
const pipelineAllocBudget = 6

// readPipeline reads the output of go test -bench Pipeline -benchmem
// -count N, which make bench writes before it runs this binary.
func readPipeline(path string) ([]pipelineStage, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the pipeline benchmark: %w", err)
	}
	defer f.Close()
	ns, allocs, bytes := map[string][]float64{}, map[string][]float64{}, map[string][]float64{}
	var order []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || !strings.HasPrefix(fields[0], "BenchmarkPipeline/") {
			continue
		}
		name := strings.TrimPrefix(fields[0], "BenchmarkPipeline/")
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			name = name[:i]
		}
		if !slices.Contains(order, name) {
			order = append(order, name)
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("pipeline benchmark line %q: %w", sc.Text(), err)
			}
			switch fields[i+1] {
			case "ns/op":
				ns[name] = append(ns[name], v)
			case "allocs/op":
				allocs[name] = append(allocs[name], v)
			case "B/op":
				bytes[name] = append(bytes[name], v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the pipeline benchmark: %w", err)
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("no BenchmarkPipeline results in %s", path)
	}
	var out []pipelineStage
	for _, name := range order {
		out = append(out, pipelineStage{Name: name, NsPerOp: spreadOf(ns[name]),
			AllocsMed: spreadOf(allocs[name]).Med, BytesMed: spreadOf(bytes[name]).Med})
	}
	return out, nil
}

// pipelineStageOf is the named stage, or the zero stage.
func pipelineStageOf(stages []pipelineStage, name string) pipelineStage {
	for _, s := range stages {
		if s.Name == name {
			return s
		}
	}
	return pipelineStage{}
}

// pipelineTable writes the pipeline benchmark's stages.
func pipelineTable(p printf, stages []pipelineStage) {
	p("\n## Pipeline benchmark (in process)\n\n")
	if len(stages) == 0 {
		p("Not run: make bench runs `go test -run '^$' -bench Pipeline -benchmem -count 5 ./internal/requestpath/nodeproxy` and passes its output with -pipeline.\n")
		return
	}
	p("`BenchmarkPipeline` (internal/requestpath/nodeproxy): one plain GET of 1 KiB with a session cookie through the node proxy as New builds it, " +
		"against a fasthttp app on loopback, in one process (both cores, not pinned): each stage alone, the whole pipeline (all: serve, to the finished access log), " +
		"and a bare fasthttp proxy of the same request on the same client settings (bare). Medians of the runs, the lowest and highest in brackets.\n\n")
	p("| stage | ns/op | allocs/op | B/op |\n|---|---|---|---|\n")
	for _, s := range stages {
		p("| %s | %.0f (%.0f-%.0f) | %.0f | %.0f |\n", s.Name, s.NsPerOp.Med, s.NsPerOp.Min, s.NsPerOp.Max, s.AllocsMed, s.BytesMed)
	}
}
