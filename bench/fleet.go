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
	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/testing/clustertest"
)

// fleetConfig is what -fleet measures.
type fleetConfig struct {
	out     string
	sizes   string // node counts, comma-separated
	users   int
	changes int
	churn   string // fleet.ParseChurn's form
}

// churnFor is the shortest churn phase of each size.
const churnFor = 10 * time.Second

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
	if c.changes < 1 || c.users <= c.changes {
		return fmt.Errorf("-fleet-changes %d must be positive and -fleet-users %d more: the churn changes the accounts the reaches do not", c.changes, c.users)
	}
	churn, err := fleet.ParseChurn(c.churn)
	if err != nil {
		return fmt.Errorf("-fleet-churn: %w", err)
	}
	start := time.Now()
	cp, err := clustertest.Start(ctx)
	if err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	defer cp.Stop()
	rows, err := fleet.Run(ctx, cp.AdminConfig(), fleet.Options{Sizes: sizes, Users: c.users, Changes: c.changes, Churn: churn, ChurnFor: churnFor, Logger: log})
	if err != nil {
		return err
	}
	var b strings.Builder
	fleetTable(func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }, rows, c, churn, time.Now().UTC(), time.Since(start))
	if err := os.WriteFile(c.out, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", c.out, err)
	}
	log.Info("wrote "+c.out, "took", time.Since(start).Round(time.Second))
	return nil
}

// fleetTable writes the fleet's growth tables.
func fleetTable(p printf, rows []fleet.Row, c fleetConfig, churn fleet.Churn, at time.Time, took time.Duration) {
	p("# sandgate fleet: node proxies against one API server\n\n")
	p("Written by `./bin/sandgate-bench -fleet %s -fleet-nodes %s -fleet-users %d -fleet-changes %d -fleet-churn %s` on %s; the run took %s.\n\n",
		c.out, c.sizes, c.users, c.changes, churn, at.Format("2006-01-02 15:04 MST"), took.Round(time.Second))
	p("One real kube-apiserver and etcd (unpinned, on this machine's cores) hold %d accounts: a managed SandboxClaim and a Sandbox each, "+
		"spread over the largest size's Nodes. For each size, that many node proxies' informer caches (internal/informer, each with "+
		"clients and watches of its own, all in the bench's process) list and watch them; then %d claims change one at a time, "+
		"each by raising its session epoch, which is what a logout of every session writes. The figures are the API server's own "+
		"metrics (`/metrics`) and the caches' own callbacks and waits:\n\n", c.users, c.changes)
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
	p("\n## Under churn, and the leader's reports\n\n")
	p("Then, with the churn running in the background (%s per second: new accounts, logouts, suspends and wakes of other accounts, "+
		"each one API call at its own steady rate), %d times in turn: a logout; a suspend, until the last cache routes the sandbox "+
		"as Suspended (its requests held for a wake); a wake, until none does. The phase lasts at least %s. *churn* is the changes per "+
		"second made, the measured ones included; *API cores* the API server's CPU over the phase, in cores. *leader* is the time "+
		"to decode and merge one report interval's reports of that many node proxies (activity.DecodeReport, then the sweeper's "+
		"Aggregator, on one goroutine; median of 5 intervals) with %.0f%% of the accounts active, each seen by two nodes; *leader "+
		"share* is that over the %s report interval. The HTTP exchange and each report's authentication are not in it.\n\n",
		churn, c.changes, churnFor, 100*fleet.ActiveShare, activity.DefaultReportInterval)
	p("| nodes | churn | API cores | logout p99 | logout max | suspend p50 | suspend p99 | suspend max | wake p99 | leader | leader share |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		p("| %d | %.1f/s | %.2f | %s | %s | %s | %s | %s | %s | %s | %.3f%% |\n", r.Nodes, r.ChurnRate, r.ChurnCores, ms(r.ChurnedLogout.P99),
			ms(r.ChurnedLogout.Max), ms(r.Suspend.P50), ms(r.Suspend.P99), ms(r.Suspend.Max), ms(r.Wake.P99), ms(r.Leader),
			100*float64(r.Leader)/float64(activity.DefaultReportInterval))
	}
	if len(rows) < 2 {
		return
	}
	p("\n## Growth\n\n")
	first, last := rows[0], rows[len(rows)-1]
	dur := func(v float64) string { return ms(time.Duration(v)) }
	for _, f := range []struct {
		name  string
		value func(fleet.Row) float64
		unit  func(float64) string
	}{
		{"watches", func(r fleet.Row) float64 { return r.Watches }, func(v float64) string { return fmt.Sprintf("%.0f", v) }},
		{"ready", func(r fleet.Row) float64 { return float64(r.Ready) }, dur},
		{"events per change", func(r fleet.Row) float64 { return r.EventsPerChange }, func(v float64) string { return fmt.Sprintf("%.1f", v) }},
		{"reach p99", func(r fleet.Row) float64 { return float64(r.Reach.P99) }, dur},
		{"API CPU per change", func(r fleet.Row) float64 { return float64(r.APICPUPerChange) }, dur},
		{"API RSS", func(r fleet.Row) float64 { return r.APIRSS }, func(v float64) string { return mib(int64(v)) }},
		{"API cores under churn", func(r fleet.Row) float64 { return r.ChurnCores }, func(v float64) string { return fmt.Sprintf("%.2f", v) }},
		{"suspend reach p99", func(r fleet.Row) float64 { return float64(r.Suspend.P99) }, dur},
		{"leader", func(r fleet.Row) float64 { return float64(r.Leader) }, dur},
	} {
		p("- %s: %s\n", f.name, growth(float64(first.Nodes), f.value(first), float64(last.Nodes), f.value(last), "nodes", f.unit))
	}
}
