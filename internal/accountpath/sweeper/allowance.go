package sweeper

import (
	"maps"
	"sync"
	"time"

	"github.com/sandgate/sandgate/internal/activity"
)

// allowances is one term's account of the busy time each user's agent
// used today (UTC): time past its idle deadline that only its busy
// declaration kept it awake. A new term starts from nothing, as its grace
// period does: a failover can give an agent at most one more allowance.
type allowances struct {
	daily time.Duration
	// maxStep bounds one charge: a gap between sweeps longer than this
	// (a stalled loop) is not all charged.
	maxStep time.Duration

	mu       sync.Mutex
	used     map[string]dayUse          // by user
	charging map[activity.Key]time.Time // last charge of each sandbox kept awake by its declaration
}

type dayUse struct {
	day  string
	used time.Duration
}

func newAllowances(daily, maxStep time.Duration) *allowances {
	return &allowances{daily: daily, maxStep: maxStep, used: make(map[string]dayUse), charging: make(map[activity.Key]time.Time)}
}

func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// left is what remains of user's allowance at now.
func (a *allowances) left(user string, now time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.daily - a.usedLocked(user, now)
}

func (a *allowances) usedLocked(user string, now time.Time) time.Duration {
	if u, ok := a.used[user]; ok && u.day == day(now) {
		return u.used
	}
	return 0
}

// charge records a sweep's decision on sandbox k of user: while busy (only
// the declaration keeps it awake) the time since the previous sweep is
// charged; otherwise k stops being charged. It returns what it charged.
func (a *allowances) charge(user string, k activity.Key, busy bool, now time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !busy {
		delete(a.charging, k)
		return 0
	}
	last, ok := a.charging[k]
	a.charging[k] = now
	if !ok || !now.After(last) {
		return 0
	}
	step := min(now.Sub(last), a.maxStep)
	a.used[user] = dayUse{day: day(now), used: a.usedLocked(user, now) + step}
	return step
}

// forget drops the sandboxes that are gone and the days that are over.
func (a *allowances) forget(gone func(activity.Key) bool, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	forget(a.charging, gone)
	today := day(now)
	maps.DeleteFunc(a.used, func(_ string, u dayUse) bool { return u.day != today })
}
