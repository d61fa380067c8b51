package egress

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandgate/sandgate/internal/metricset"
)

// Outcomes of an egress call: the label values of requests_total and the
// audit line's outcome.
const (
	outcomeOK            = "ok"
	outcomeUnknownCaller = "unknown_caller"
	outcomeStarting      = "starting"
	outcomeBadPath       = "bad_path"
	outcomeBadBody       = "bad_body"
	outcomeStoredState   = "stored_state"
	outcomeOverBudget    = "over_budget"
	outcomeNoKey         = "no_key"
	outcomeUpstreamError = "upstream_error"
	outcomeAborted       = "aborted"
	outcomePanic         = "panic"
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
	s := metricset.New("egress")
	m := &metrics{
		requests: s.CounterVec(prometheus.CounterOpts{
			Name: "requests_total", Help: "Egress calls by provider and outcome (ok, unknown_caller, starting, bad_path, bad_body, stored_state, over_budget, no_key, upstream_error, aborted, panic).",
		}, []string{"provider", "outcome"}),
		tokens: s.CounterVec(prometheus.CounterOpts{
			Name: "tokens_total", Help: "Tokens the providers reported, by provider and kind (prompt, completion).",
		}, []string{"provider", "kind"}),
		upstream: s.HistogramVec(prometheus.HistogramOpts{
			Name: "upstream_header_seconds", Help: "Time from sending a call to the provider's response headers.",
			Buckets: []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, "provider"),
	}
	if err := s.Register(reg); err != nil {
		return nil, err
	}
	return m, nil
}
