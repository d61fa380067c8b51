package authapi

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// maxLimiterKeys bounds the clients the limiter remembers; past it, expired
// windows are swept, and if none expired the table is reset.
const maxLimiterKeys = 100_000

// limiter is a fixed-window counter per client, as the seed's
// AUTH_RATE_LIMIT per AUTH_RATE_WINDOW. It is per replica.
type limiter struct {
	limit  int
	window time.Duration
	now    func() time.Time

	mu      sync.Mutex
	windows map[netip.Addr]*window
}

type window struct {
	count int
	reset time.Time
}

func newLimiter(limit int, span time.Duration, now func() time.Time) *limiter {
	return &limiter{limit: limit, window: span, now: now, windows: map[netip.Addr]*window{}}
}

// allow counts one request from client and reports whether it is within the
// limit, and if not, how long until the window resets.
func (l *limiter) allow(client netip.Addr) (bool, time.Duration) {
	if l.limit <= 0 {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.windows[client]
	if !ok || !now.Before(w.reset) {
		if !ok && len(l.windows) >= maxLimiterKeys {
			l.sweep(now)
		}
		w = &window{reset: now.Add(l.window)}
		l.windows[client] = w
	}
	w.count++
	if w.count > l.limit {
		return false, w.reset.Sub(now)
	}
	return true, 0
}

func (l *limiter) sweep(now time.Time) {
	for k, w := range l.windows {
		if !now.Before(w.reset) {
			delete(l.windows, k)
		}
	}
	if len(l.windows) >= maxLimiterKeys {
		clear(l.windows)
	}
}

// clientAddr returns the address to rate limit: the rightmost
// X-Forwarded-For entry when the peer is a trusted proxy (the entry that
// proxy appended), otherwise the peer itself. Entries further left are
// client-supplied and never trusted.
func clientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	peer := peerAddr(r)
	if !peer.IsValid() || !inPrefixes(peer, trusted) {
		return peer
	}
	xff := r.Header.Values("X-Forwarded-For")
	if len(xff) == 0 {
		return peer
	}
	last := xff[len(xff)-1]
	if i := strings.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	addr, err := netip.ParseAddr(strings.TrimSpace(last))
	if err != nil {
		return peer
	}
	return addr.Unmap()
}

func peerAddr(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return addr.Unmap()
}

func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// limited answers 429 with Retry-After before next runs, and so before
// anything reads the request body.
func (s *Server) limited(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if ok, wait := s.limiter.allow(clientAddr(r, s.opts.TrustedProxies)); !ok {
			s.fail(w, r, withRetryAfter(ErrRateLimited, wait))
			return
		}
		next(w, r)
	}
}
