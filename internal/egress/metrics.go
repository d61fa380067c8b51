package egress

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of an egress call: the label values of requests_total and the
// audit line's outcome.
const (
	outcomeOK            = "ok"
	outcomeUnknownCaller = "unknown_caller"
	outcomeBadPath       = "bad_path"
	outcomeOverBudget    = "over_budget"
	outcomeNoKey         = "no_key"
	outcomeUpstreamError = "upstream_error"
	outcomeAborted       = "aborted"
)

// metrics label values come from the configured providers and the fixed
// outcomes: never a user (there may be 100k), whose usage is in the audit
// stream instead.
type metrics struct {
	requests *prometheus.CounterVec   // provider, outcome
	tokens   *prometheus.CounterVec   // provider, kind
	upstream *prometheus.HistogramVec // provider: time to response headers
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sandgate", Subsystem: "egress", Name: "requests_total",
			Help: "Egress calls by provider and outcome (ok, unknown_caller, bad_path, over_budget, no_key, upstream_error, aborted).",
		}, []string{"provider", "outcome"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sandgate", Subsystem: "egress", Name: "tokens_total",
			Help: "Tokens the providers reported, by provider and kind (prompt, completion).",
		}, []string{"provider", "kind"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "sandgate", Subsystem: "egress", Name: "upstream_header_seconds",
			Help:    "Time from sending a call to the provider's response headers.",
			Buckets: []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"provider"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.tokens, m.upstream} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register egress metrics: %w", err)
		}
	}
	return m, nil
}
