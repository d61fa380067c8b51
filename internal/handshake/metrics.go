package handshake

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandgate/sandgate/internal/metricset"
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
	s := metricset.New("handshake")
	m := &metrics{
		handshakes: s.CounterVec(prometheus.CounterOpts{
			Name: "total", Help: "Handshakes (token lookup plus exchange) by result and token source.",
		}, []string{"result", "source"}, withSource(allResults, source)...),
		candidates: s.CounterVec(prometheus.CounterOpts{
			Name: "candidates_total", Help: "Launch-token candidates by outcome (accepted, refused with 401, failed, skipped as refused before) and token source.",
		}, []string{"outcome", "source"}, withSource(allCandidateOutcomes, source)...),
		cacheLookups: s.CounterVec(prometheus.CounterOpts{
			Name: "cache_lookups_total", Help: "Upstream cookie cache lookups by result (hit or miss).",
		}, []string{"result"}, metricset.Each("hit", "miss")...),
		logBytesRead: s.Counter(prometheus.CounterOpts{
			Name: "log_bytes_read_total", Help: "Bytes read from pod log files (compressed bytes for .gz files).",
		}),
	}
	if err := s.Register(reg); err != nil {
		return nil, err
	}
	return m, nil
}

// withSource pairs each of values with source, the series of a
// two-label vector.
func withSource(values []string, source string) [][]string {
	out := make([][]string, len(values))
	for i, v := range values {
		out[i] = []string{v, source}
	}
	return out
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
