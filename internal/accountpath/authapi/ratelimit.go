package authapi

import (
	"container/list"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/sandgate/sandgate/internal/clientaddr"
)

// maxLimiterKeys bounds the clients a limiter remembers; past it, the
// client whose window began first is forgotten, so a flood of new
// addresses never resets the windows of the clients already counted.
const maxLimiterKeys = 100_000

// budgetWindow is the span of the budgets shared by all clients
// (SignupBudget, InternalReviewBudget).
const budgetWindow = time.Minute

// signupPattern is the route the global signup budget applies to.
const signupPattern = "POST /users"

// limiter is a fixed-window counter per client, as the seed's
// AUTH_RATE_LIMIT per AUTH_RATE_WINDOW, keyed by clientaddr.Key (an IPv6
// client by its /64). It also holds the signup budget all clients share.
// It is per replica.
type limiter struct {
	limit   int
	window  time.Duration
	now     func() time.Time
	maxKeys int

	mu      sync.Mutex
	windows map[netip.Prefix]*list.Element
	order   *list.List // of *window, oldest start first
	signups budget
}

type window struct {
	key   netip.Prefix
	count int
	reset time.Time
}

func newLimiter(limit int, span time.Duration, now func() time.Time) *limiter {
	return &limiter{
		limit: limit, window: span, now: now, maxKeys: maxLimiterKeys,
		windows: map[netip.Prefix]*list.Element{}, order: list.New(),
	}
}

// allow counts one request from client and reports whether it is within the
// limit, and if not, how long until the window resets.
func (l *limiter) allow(client netip.Addr) (bool, time.Duration) {
	if l.limit <= 0 {
		return true, 0
	}
	key := clientaddr.Key(client)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire(now)
	e, ok := l.windows[key]
	if !ok {
		if len(l.windows) >= l.maxKeys {
			l.forget(l.order.Front())
		}
		e = l.order.PushBack(&window{key: key, reset: now.Add(l.window)})
		l.windows[key] = e
	}
	w := e.Value.(*window)
	w.count++
	if w.count > l.limit {
		return false, w.reset.Sub(now)
	}
	return true, 0
}

// expire forgets the windows that have ended. Every window has the same
// span and joins the back of the order when it starts, so ended windows
// are at the front.
func (l *limiter) expire(now time.Time) {
	for e := l.order.Front(); e != nil && !now.Before(e.Value.(*window).reset); e = l.order.Front() {
		l.forget(e)
	}
}

func (l *limiter) forget(e *list.Element) {
	delete(l.windows, e.Value.(*window).key)
	l.order.Remove(e)
}

// size returns how many clients the limiter remembers.
func (l *limiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.windows)
}

// budget is a fixed-window counter shared by all clients.
type budget struct {
	mu    sync.Mutex
	count int
	reset time.Time
}

// take counts one against limit in the current window of span and reports
// whether it fits, and if not, how long until the window resets.
func (b *budget) take(now time.Time, limit int, span time.Duration) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !now.Before(b.reset) {
		b.count, b.reset = 0, now.Add(span)
	}
	if b.count >= limit {
		return false, b.reset.Sub(now)
	}
	b.count++
	return true, 0
}

// clientAddr returns the address to rate limit: the peer, or when the peer
// is a trusted proxy, the rightmost X-Forwarded-For entry that is not
// (clientaddr.Resolve). Entries further left are client-supplied and never
// trusted.
func clientAddr(r *http.Request, trusted []netip.Prefix) netip.Addr {
	return clientaddr.Resolve(peerAddr(r), r.Header.Values("X-Forwarded-For"), trusted)
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

// limited answers 429 with Retry-After before next runs, and so before
// anything reads the request body: past the client's own limit, and for
// signups past the SignupBudget all clients share.
func (s *Server) limited(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ok, wait := s.limiter.allow(clientAddr(r, s.opts.TrustedProxies))
		if ok && r.Pattern == signupPattern {
			ok, wait = s.limiter.signups.take(s.opts.Now(), s.opts.SignupBudget, budgetWindow)
		}
		if !ok {
			s.fail(w, r, withRetryAfter(ErrRateLimited, wait))
			return
		}
		next(w, r)
	}
}
