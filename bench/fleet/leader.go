package fleet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sandgate/sandgate/bench/load"
	"github.com/sandgate/sandgate/internal/accountpath/sweeper"
	"github.com/sandgate/sandgate/internal/activity"
)

// ActiveShare is the share of accounts with traffic in one report
// interval, and nodesPerActive how many node proxies see each such
// sandbox's traffic in it: the one a browser's request entered and the
// one its pod runs on.
const (
	ActiveShare    = 0.1
	nodesPerActive = 2
)

// leaderRounds is how many report intervals leaderCost times.
const leaderRounds = 5

// leaderCost is the time the leader takes, per report interval, to decode
// and merge n node proxies' reports (activity.DecodeReport, then the
// sweeper's Aggregator.Observe, as its report endpoint does) when
// ActiveShare of users accounts had traffic, each seen by nodesPerActive
// nodes: the median over leaderRounds intervals, on one goroutine, so
// wall time is its CPU time. The HTTP exchange and the caller's
// authentication are not in it.
func leaderCost(n, users int) (time.Duration, error) {
	active := max(1, int(float64(users)*ActiveShare))
	bodies := make([][]byte, n)
	sent := time.Now().UnixMilli()
	for node := range n {
		r := activity.Report{Node: nodeName(node), SentAt: sent}
		for k := node; k < active*nodesPerActive; k += n {
			r.Entries = append(r.Entries, activity.Entry{Namespace: namespace, Sandbox: sandboxName(k % active), LastActivity: sent - int64(k%10_000), InFlight: int64(k % 2)})
		}
		body, err := json.Marshal(r)
		if err != nil {
			return 0, fmt.Errorf("encode report: %w", err)
		}
		bodies[node] = body
	}
	agg := sweeper.NewAggregator(activity.DefaultReportInterval)
	took := make([]time.Duration, leaderRounds)
	for round := range took {
		start := time.Now()
		for _, b := range bodies {
			r, err := activity.DecodeReport(bytes.NewReader(b))
			if err != nil {
				return 0, err
			}
			agg.Observe(r, time.Now())
		}
		took[round] = time.Since(start)
	}
	return load.Summarise(took).P50, nil
}
