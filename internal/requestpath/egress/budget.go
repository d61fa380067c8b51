package egress

import (
	"errors"
	"io/fs"
	"log/slog"
	"math"
	"sync"
	"time"
)

// Why a call is over budget.
const (
	overRequests = "requests_per_minute"
	overTokens   = "tokens_per_day"
	overInFlight = "calls_in_flight"
)

// budgets counts each user's requests (a token bucket refilled at
// RequestsPerMinute per minute, holding at most a minute's worth), tokens
// per UTC day and calls open at once (at most inFlight). A call admitted
// reserves tokens at once (its reservation, decided from its body) and
// settles when it ends: down to the usage the provider reported, or the
// reservation kept when none arrived. A user is admitted while the day's
// count, reservations included, is under the limit, so one call may take
// a user past it; the next is refused.
type budgets struct {
	now      func() time.Time
	inFlight int
	mu       sync.Mutex
	users    map[string]*userBudget
}

type userBudget struct {
	allowance float64 // requests that may start now
	last      time.Time
	day       int64 // UTC days since the epoch that used counts
	used      int64 // tokens used that day, reservations of open calls included
	held      int64 // reservations of open calls admitted that day
	requests  int64 // requests that day
	open      int   // calls admitted and not over yet
}

// Usage is a user's count for the current UTC day.
type Usage struct {
	Requests int64
	Tokens   int64
	// Day is the UTC day counted, in days since 1970-01-01.
	Day int64
}

func newBudgets(now func() time.Time, inFlight int) *budgets {
	return &budgets{now: now, inFlight: inFlight, users: make(map[string]*userBudget)}
}

func utcDay(t time.Time) int64 { return t.UTC().Unix() / 86400 }

func (b *budgets) entry(user string, now time.Time, l Limits) *userBudget {
	u := b.users[user]
	if u == nil {
		u = &userBudget{allowance: float64(l.RequestsPerMinute), last: now, day: utcDay(now)}
		b.users[user] = u
	}
	if d := utcDay(now); d != u.day {
		u.day, u.used, u.held, u.requests = d, 0, 0, 0
	}
	return u
}

// grant is a call admit let through: the day its reservation was taken
// from, and how much.
type grant struct {
	day     int64
	reserve int64
}

// admit takes one request and reserve tokens from user's budget, or says
// why not and when to retry: at the next UTC day when the tokens are
// spent, in a second when only open calls' reservations fill the day. A
// call admitted is open until settle.
func (b *budgets) admit(user string, l Limits, reserve int64) (grant, string, time.Duration) {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.entry(user, now, l)
	if l.TokensPerDay > 0 && u.used >= l.TokensPerDay {
		if u.used-u.held < l.TokensPerDay {
			return grant{}, overTokens, time.Second
		}
		next := time.Unix((u.day+1)*86400, 0)
		return grant{}, overTokens, next.Sub(now)
	}
	if u.open >= b.inFlight {
		return grant{}, overInFlight, time.Second
	}
	if l.RequestsPerMinute > 0 {
		rate := float64(l.RequestsPerMinute) / 60 // per second
		u.allowance = math.Min(float64(l.RequestsPerMinute), u.allowance+now.Sub(u.last).Seconds()*rate)
		u.last = now
		if u.allowance < 1 {
			return grant{}, overRequests, time.Duration((1 - u.allowance) / rate * float64(time.Second))
		}
		u.allowance--
	}
	u.requests++
	u.open++
	u.used += reserve
	u.held += reserve
	return grant{day: u.day, reserve: reserve}, "", 0
}

// settle ends a call admit let through, charging tokens in place of its
// reservation. A reservation taken on a day that is over went with it;
// tokens are then charged to the new day.
func (b *budgets) settle(user string, g grant, tokens int64, l Limits) {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.entry(user, now, l)
	u.open--
	if g.day == u.day {
		u.used -= g.reserve
		u.held -= g.reserve
	}
	u.used += max(0, tokens)
}

// usage is user's count today.
func (b *budgets) usage(user string) Usage {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	u := b.users[user]
	if u == nil || u.day != utcDay(now) {
		return Usage{Day: utcDay(now)}
	}
	return Usage{Requests: u.requests, Tokens: u.used, Day: u.day}
}

// limitSource is each user's Limits: Options.Default, overridden by the
// limits file when there is one, read again when it changes. A file that
// no longer parses, or is over maxLimitsFileBytes, is logged once and the
// last good one kept.
type limitSource struct {
	path  string
	base  Limits
	files *fileCache
	log   *slog.Logger

	mu     sync.Mutex
	gen    uint64
	parsed LimitsFile
}

func (s *limitSource) forUser(user string) Limits {
	if s.path == "" {
		return s.base
	}
	data, gen, err := s.files.readGen(s.path)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.gen, s.parsed = 0, LimitsFile{}
	case errors.Is(err, errTooLarge):
		if gen != s.gen {
			s.gen = gen
			s.log.Warn("limits file too large; keeping the last", "path", s.path, "err", err)
		}
	case err != nil:
		s.log.Warn("read limits file; keeping the last", "path", s.path, "err", err)
	case gen != s.gen:
		s.gen = gen
		if f, err := ParseLimits(data); err != nil {
			s.log.Warn("limits file does not parse; keeping the last", "path", s.path, "err", err)
		} else {
			s.parsed = f
		}
	}
	return s.parsed.For(user, s.base)
}
