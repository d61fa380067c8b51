package authapi

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandgate/sandgate/internal/metricset"
)

// Metrics are the auth API's Prometheus collectors. Label values come from
// small fixed sets: route names, status classes, outcomes, reasons, stages.
type Metrics struct {
	// Requests counts responses by route and status class (2xx, 3xx, ...).
	Requests *prometheus.CounterVec
	// Duration is the request latency by route.
	Duration *prometheus.HistogramVec
	// Stage is the latency of one pipeline stage (claim_create, claim_ready,
	// claim_delete, revoke, token_review).
	Stage *prometheus.HistogramVec
	// Signups counts signups by outcome (created, exists, rejected).
	Signups *prometheus.CounterVec
	// Logins counts logins by outcome (ok, rejected).
	Logins *prometheus.CounterVec
	// Rejections counts refused requests by reason (rate_limited,
	// bad_invite, invalid_user, too_large, bad_origin, ...).
	Rejections *prometheus.CounterVec
	// ClaimReady is the time from creating a claim to seeing it Ready.
	ClaimReady prometheus.Histogram
	// Renewals counts session renewals by outcome (ok, ended, bad_token).
	Renewals *prometheus.CounterVec
	// Entries counts entry code redemptions (subdomain routing) by
	// outcome (ok, refused).
	Entries *prometheus.CounterVec
	// Revocations counts ended sessions by kind (logout, epoch, recreate,
	// delete).
	Revocations *prometheus.CounterVec
	// KeyRotations counts signing keys this replica staged.
	KeyRotations prometheus.Counter
	// SigningKeys is the number of keys in the loaded ring.
	SigningKeys prometheus.Gauge
	// TokenReviews counts internal-caller checks by outcome (allowed,
	// denied, unauthenticated, error) and whether the cache answered.
	TokenReviews *prometheus.CounterVec
	// Wakes counts wake requests by outcome (patched, running, unbound,
	// unknown).
	Wakes *prometheus.CounterVec
}

// NewMetrics creates the collectors and registers them with reg, which is
// normally a private registry; nil registers nothing (tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	s := metricset.New("authapi")
	latency := []float64{.001, .005, .01, .05, .1, .5, 1, 5, 15, 60, 120}
	m := &Metrics{
		Requests: s.CounterVec(prometheus.CounterOpts{
			Name: "requests_total", Help: "HTTP responses by route and status class.",
		}, []string{"route", "code"}),
		Duration: s.HistogramVec(prometheus.HistogramOpts{
			Name: "request_duration_seconds", Help: "HTTP request latency by route.", Buckets: latency,
		}, "route"),
		Stage: s.HistogramVec(prometheus.HistogramOpts{
			Name: "stage_duration_seconds", Help: "Latency of one pipeline stage.", Buckets: latency,
		}, "stage"),
		Signups: s.CounterVec(prometheus.CounterOpts{
			Name: "signups_total", Help: "Signups by outcome.",
		}, []string{"outcome"}),
		Logins: s.CounterVec(prometheus.CounterOpts{
			Name: "logins_total", Help: "Logins by outcome.",
		}, []string{"outcome"}),
		Rejections: s.CounterVec(prometheus.CounterOpts{
			Name: "rejections_total", Help: "Refused requests by reason.",
		}, []string{"reason"}),
		ClaimReady: s.Histogram(prometheus.HistogramOpts{
			Name: "claim_ready_seconds", Help: "Time from claim creation to Ready.",
			Buckets: []float64{.25, .5, 1, 2, 3, 5, 10, 20, 30, 60, 120, 300},
		}),
		Entries: s.CounterVec(prometheus.CounterOpts{
			Name: "origin_entries_total", Help: "Entry code redemptions for user origin sessions by outcome.",
		}, []string{"outcome"}),
		Renewals: s.CounterVec(prometheus.CounterOpts{
			Name: "renewals_total", Help: "Session renewals by outcome.",
		}, []string{"outcome"}),
		Revocations: s.CounterVec(prometheus.CounterOpts{
			Name: "revocations_total", Help: "Ended sessions by kind.",
		}, []string{"kind"}),
		KeyRotations: s.Counter(prometheus.CounterOpts{
			Name: "key_rotations_total", Help: "Signing keys staged by this replica.",
		}),
		SigningKeys: s.Gauge(prometheus.GaugeOpts{
			Name: "signing_keys", Help: "Keys in the loaded signing key ring.",
		}),
		TokenReviews: s.CounterVec(prometheus.CounterOpts{
			Name: "token_reviews_total", Help: "Internal-caller checks by outcome and cache use.",
		}, []string{"outcome", "cached"}),
		Wakes: s.CounterVec(prometheus.CounterOpts{
			Name: "wakes_total", Help: "Wake requests from node proxies by outcome.",
		}, []string{"outcome"}),
	}
	if err := s.Register(reg); err != nil {
		panic(err) // a second registration on one registry: a wiring bug
	}
	return m
}
