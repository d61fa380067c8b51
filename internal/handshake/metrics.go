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
	resultExchange   = "exchange_error"
	resultNoCookie   = "no_cookie"
	resultTimeout    = "timeout"
	resultError      = "error"
)

var allResults = []string{
	resultOK, resultInvalidRef, resultNoLogs, resultUnsafePath, resultNoToken,
	resultExchange, resultNoCookie, resultTimeout, resultError,
}

// metrics holds the package's collectors. They are registered on the
// Registerer from Options, never globally.
type metrics struct {
	handshakes   *prometheus.CounterVec // label result: allResults
	cacheLookups *prometheus.CounterVec // label result: hit, miss
	logBytesRead prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		handshakes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "sandgate", Subsystem: "handshake", Name: "total",
			Help: "Handshakes (log read plus token exchange) by result.",
		}, []string{"result"}),
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
		m.handshakes.WithLabelValues(r)
	}
	m.cacheLookups.WithLabelValues("hit")
	m.cacheLookups.WithLabelValues("miss")
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.handshakes, m.cacheLookups, m.logBytesRead} {
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
	case errors.Is(err, ErrNoCookie):
		return resultNoCookie
	case errors.Is(err, ErrExchange):
		return resultExchange
	case errors.Is(err, context.DeadlineExceeded):
		return resultTimeout
	}
	return resultError
}
