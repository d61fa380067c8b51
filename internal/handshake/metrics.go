package handshake

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Handshake results, the only values of the handshakes' result label.
const (
	resultOK         = "ok"
	resultInvalidRef = "invalid_ref"
	resultNoLogs     = "no_logs"
	resultUnsafePath = "unsafe_path"
	resultNoToken    = "no_token"
	resultRefused    = "token_refused"
	resultExchange   = "exchange_error"
	resultNoCookie   = "no_cookie"
	resultTimeout    = "timeout"
	resultThrottled  = "throttled"
	resultError      = "error"
)

var allResults = []string{
	resultOK, resultInvalidRef, resultNoLogs, resultUnsafePath, resultNoToken,
	resultRefused, resultExchange, resultNoCookie, resultTimeout, resultThrottled, resultError,
}

// Candidate outcomes, the only values of the candidates' outcome label.
const (
	candidateAccepted = "accepted" // exchanged for a cookie
	candidateRefused  = "refused"  // the app answered 401
	candidateFailed   = "failed"   // the exchange failed otherwise
	candidateSkipped  = "skipped"  // refused before, not tried again
)

var allCandidateOutcomes = []string{candidateAccepted, candidateRefused, candidateFailed, candidateSkipped}

// metrics holds the package's collectors. They are registered on the
// Registerer from Options, never globally.
type metrics struct {
	handshakes   *prometheus.CounterVec // labels result (allResults), source
	candidates   *prometheus.CounterVec // labels outcome (allCandidateOutcomes), source
	cacheLookups *prometheus.CounterVec // label result: hit, miss
	logBytesRead prometheus.Counter
}

// newMetrics builds the collectors with every series of source created.
func newMetrics(reg prometheus.Registerer, source string) (*metrics, error) {
	m := &metrics{
		handshakes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sandgate", Subsystem: "handshake", Name: "total",
			Help: "Handshakes (token lookup plus exchange) by result and token source.",
		}, []string{"result", "source"}),
		candidates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sandgate", Subsystem: "handshake", Name: "candidates_total",
			Help: "Launch-token candidates by outcome (accepted, refused with 401, failed, skipped as refused before) and token source.",
		}, []string{"outcome", "source"}),
		cacheLookups: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sandgate", Subsystem: "handshake", Name: "cache_lookups_total",
			Help: "Upstream cookie cache lookups by result (hit or miss).",
		}, []string{"result"}),
		logBytesRead: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "sandgate", Subsystem: "handshake", Name: "log_bytes_read_total",
			Help: "Bytes read from pod log files (compressed bytes for .gz files).",
		}),
	}
	// Create every series up front so dashboards see zeros, not gaps.
	for _, r := range allResults {
		m.handshakes.WithLabelValues(r, source)
	}
	for _, o := range allCandidateOutcomes {
		m.candidates.WithLabelValues(o, source)
	}
	m.cacheLookups.WithLabelValues("hit")
	m.cacheLookups.WithLabelValues("miss")
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.handshakes, m.candidates, m.cacheLookups, m.logBytesRead} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register handshake metrics: %w", err)
		}
	}
	return m, nil
}

// resultOf maps a handshake error onto its result label.
func resultOf(err error) string {
	switch {
	case err == nil:
		return resultOK
	case errors.Is(err, ErrInvalidRef):
		return resultInvalidRef
	case errors.Is(err, ErrNoLogs):
		return resultNoLogs
	case errors.Is(err, ErrUnsafePath):
		return resultUnsafePath
	case errors.Is(err, ErrNoToken):
		return resultNoToken
	case errors.Is(err, ErrTokenRefused):
		return resultRefused
	case errors.Is(err, ErrNoCookie):
		return resultNoCookie
	case errors.Is(err, ErrExchange):
		return resultExchange
	case errors.Is(err, context.DeadlineExceeded):
		return resultTimeout
	case errors.Is(err, ErrThrottled):
		return resultThrottled
	}
	return resultError
}
