package egress

import (
	"sync"
	"time"
)

// maxWarned bounds the callers warnLimit remembers; past it, callers it
// has not seen are counted together under "".
const maxWarned = 1024

// warnLimit lets one warning per caller through per interval and counts
// the ones it holds back, so a caller retrying a refused call cannot fill
// the node proxy's log.
type warnLimit struct {
	now      func() time.Time
	interval time.Duration

	mu      sync.Mutex
	callers map[string]*warned
}

type warned struct {
	last       time.Time
	suppressed int
}

func newWarnLimit(now func() time.Time, interval time.Duration) *warnLimit {
	return &warnLimit{now: now, interval: interval, callers: make(map[string]*warned)}
}

// allow reports whether caller's warning is logged now, and how many of
// its warnings were held back since the last one logged.
func (l *warnLimit) allow(caller string) (bool, int) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.callers[caller]
	if w == nil {
		if len(l.callers) >= maxWarned {
			l.forget(now)
		}
		if len(l.callers) >= maxWarned {
			caller = ""
			w = l.callers[caller]
		}
	}
	if w == nil {
		l.callers[caller] = &warned{last: now}
		return true, 0
	}
	if now.Sub(w.last) < l.interval {
		w.suppressed++
		return false, 0
	}
	n := w.suppressed
	w.last, w.suppressed = now, 0
	return true, n
}

// forget drops the callers whose interval is over and that have nothing
// held back.
func (l *warnLimit) forget(now time.Time) {
	for k, w := range l.callers {
		if now.Sub(w.last) >= l.interval && w.suppressed == 0 {
			delete(l.callers, k)
		}
	}
}
