package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sandgate/sandgate/bench/fleet"
	"github.com/sandgate/sandgate/internal/testing/clustertest"
)

// fleetConfig is what -fleet measures.
type fleetConfig struct {
	out     string
	sizes   string // node counts, comma-separated
	users   int
	changes int
}

// parseSizes reads a comma-separated list of increasing node counts.
func parseSizes(s string) ([]int, error) {
	var sizes []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || (len(sizes) > 0 && n <= sizes[len(sizes)-1]) {
			return nil, fmt.Errorf("-fleet-nodes %q: want increasing positive node counts", s)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}

// runFleet measures the fleet on a control plane of its own and writes
// its table to c.out.
func runFleet(ctx context.Context, c fleetConfig, log *slog.Logger) error {
	sizes, err := parseSizes(c.sizes)
	if err != nil {
		return err
	}
	if c.users < 1 || c.changes < 1 {
		return fmt.Errorf("-fleet-users %d and -fleet-changes %d must be positive", c.users, c.changes)
	}
	start := time.Now()
	cp, err := clustertest.Start(ctx)
	if err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	defer cp.Stop()
	rows, err := fleet.Run(ctx, cp.AdminConfig(), fleet.Options{Sizes: sizes, Users: c.users, Changes: c.changes, Logger: log})
	if err != nil {
		return err
	}
	var b strings.Builder
	fleetTable(func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }, rows, c, time.Now().UTC(), time.Since(start))
	if err := os.WriteFile(c.out, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", c.out, err)
	}
	log.Info("wrote "+c.out, "took", time.Since(start).Round(time.Second))
	return nil
}

// fleetTable writes the fleet's growth table.
func fleetTable(p printf, rows []fleet.Row, c fleetConfig, at time.Time, took time.Duration) {
	p("# sandgate fleet: node proxies against one API server\n\n")
	p("Written by `./bin/sandgate-bench -fleet %s -fleet-nodes %s -fleet-users %d -fleet-changes %d` on %s; the run took %s.\n\n",
		c.out, c.sizes, c.users, c.changes, at.Format("2006-01-02 15:04 MST"), took.Round(time.Second))
	p("One real kube-apiserver and etcd (unpinned, on this machine's cores) hold %d accounts: a managed SandboxClaim and a Sandbox each, "+
		"spread over the largest size's Nodes. For each size, that many node proxies' informer caches (internal/informer, each with "+
		"clients and watches of its own, all in the bench's process) list and watch them; then %d claims change one at a time, "+
		"each by raising its session epoch, which is what a logout of every session writes. The figures are the API server's own "+
		"metrics (`/metrics`) and the caches' WatchAccount callbacks:\n\n", c.users, c.changes)
	p("- *watches*: how many more WATCH requests the API server holds open with every cache synced than before they started;\n")
	p("- *ready*: from starting the caches until the last one synced; *join*: one more cache's, started once the others run;\n")
	p("- *events per change*: SandboxClaim watch events the API server sent, per change;\n")
	p("- *reach*: from sending a change until the last cache held it, p50 / p99 / max over the changes;\n")
	p("- *API CPU per change*: the API server's CPU time over the changes (watch fan-out included), per change; *API RSS* after them;\n")
	p("- *heap per node*: the bench process's live heap with the caches synced, less before, per cache.\n\n")
	p("| nodes | watches | ready | join | events per change | reach p50 | reach p99 | reach max | API CPU per change | API RSS | heap per node |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		p("| %d | %.0f | %s | %s | %.1f | %s | %s | %s | %s | %s | %s |\n", r.Nodes, r.Watches, ms(r.Ready), ms(r.Join), r.EventsPerChange,
			ms(r.Reach.P50), ms(r.Reach.P99), ms(r.Reach.Max), ms(r.APICPUPerChange), mib(int64(r.APIRSS)), mib(int64(r.HeapPerNode)))
	}
	if len(rows) < 2 {
		return
	}
	p("\n")
	first, last := rows[0], rows[len(rows)-1]
	for _, f := range []struct {
		name  string
		value func(fleet.Row) float64
		unit  func(float64) string
	}{
		{"watches", func(r fleet.Row) float64 { return r.Watches }, func(v float64) string { return fmt.Sprintf("%.0f", v) }},
		{"ready", func(r fleet.Row) float64 { return float64(r.Ready) }, func(v float64) string { return ms(time.Duration(v)) }},
		{"events per change", func(r fleet.Row) float64 { return r.EventsPerChange }, func(v float64) string { return fmt.Sprintf("%.1f", v) }},
		{"reach p99", func(r fleet.Row) float64 { return float64(r.Reach.P99) }, func(v float64) string { return ms(time.Duration(v)) }},
		{"API CPU per change", func(r fleet.Row) float64 { return float64(r.APICPUPerChange) }, func(v float64) string { return ms(time.Duration(v)) }},
		{"API RSS", func(r fleet.Row) float64 { return r.APIRSS }, func(v float64) string { return mib(int64(v)) }},
	} {
		p("- %s: %s\n", f.name, growth(float64(first.Nodes), f.value(first), float64(last.Nodes), f.value(last), "nodes", f.unit))
	}
}
