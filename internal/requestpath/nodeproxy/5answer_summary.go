package nodeproxy

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// successes counts the plain successes of each user and route between two
// summary lines (Options.AccessLogSummary), so the access log costs a line
// per active user and interval instead of one per request.
type successes struct {
	mu     sync.Mutex
	counts map[successKey]*successCount
}

type successKey struct{ user, route string }

type successCount struct {
	requests, bytesOut int64
	longest            time.Duration
}

// newSuccessesIf returns a new count when on, else nil.
func newSuccessesIf(on bool) *successes {
	if !on {
		return nil
	}
	return &successes{counts: make(map[successKey]*successCount)}
}

// plain reports whether x is a success the summary may stand for: a 2xx
// answered without an error, a renewal, a retry, a wake hold or an abort,
// and not a WebSocket. Anything else keeps its own access-log line.
func plain(x *exchange) bool {
	return x.status >= 200 && x.status < 300 && x.err == nil && !x.ws &&
		!x.renewed && !x.retried && !x.held && !x.aborted
}

// add counts x, which took d.
func (s *successes) add(x *exchange, d time.Duration) {
	k := successKey{x.route.user, x.routeLabel()}
	s.mu.Lock()
	c := s.counts[k]
	if c == nil {
		c = &successCount{}
		s.counts[k] = c
	}
	c.requests++
	c.bytesOut += x.bytesOut
	c.longest = max(c.longest, d)
	s.mu.Unlock()
}

// write logs one line per user and route counted since the last call, in
// a stable order, and starts counting afresh.
func (s *successes) write(log *slog.Logger, interval time.Duration) {
	s.mu.Lock()
	counts := s.counts
	s.counts = make(map[successKey]*successCount, len(counts))
	s.mu.Unlock()
	keys := make([]successKey, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b successKey) int { return cmp.Or(cmp.Compare(a.user, b.user), cmp.Compare(a.route, b.route)) })
	for _, k := range keys {
		c := counts[k]
		attrs := []slog.Attr{slog.String("route", k.route), slog.String("status", "2xx"), slog.Int64("requests", c.requests),
			slog.Int64("bytes_out", c.bytesOut), slog.Float64("duration_ms_max", float64(c.longest.Microseconds())/1000),
			slog.Float64("interval_s", interval.Seconds())}
		if k.user != "" {
			attrs = append(attrs, slog.String("user", k.user))
		}
		log.LogAttrs(context.Background(), slog.LevelInfo, "requests", attrs...)
	}
}

// run writes the summary every interval until ctx ends, then once more
// for what was counted last.
func (s *successes) run(ctx context.Context, log *slog.Logger, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.write(log, interval)
		case <-ctx.Done():
			s.write(log, interval)
			return
		}
	}
}
