package testkit

import (
	"sync"
	"time"
)

// Epoch is the start of every fake clock made with NewClock(Epoch): a fixed
// date, so expected timestamps can be written down.
var Epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Clock is a fake clock for code that takes a `func() time.Time`: it moves
// only by Advance, by its step on each reading, or with the wall clock if
// made by NewOffsetClock. It is safe for concurrent use.
type Clock struct {
	mu   sync.Mutex
	at   time.Time
	step time.Duration
	wall bool
}

// NewClock returns a clock that stands at start until advanced.
func NewClock(start time.Time) *Clock { return &Clock{at: start} }

// NewSteppingClock returns a clock that moves step forward on every
// reading, so each reading is distinct (a log rotated at every write gets a
// stamp of its own).
func NewSteppingClock(start time.Time, step time.Duration) *Clock {
	return &Clock{at: start, step: step}
}

// NewOffsetClock returns a clock that runs with the wall clock, offset by
// every Advance: for code that also waits on real timers.
func NewOffsetClock() *Clock { return &Clock{wall: true} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wall {
		return time.Now().Add(c.at.Sub(time.Time{}))
	}
	c.at = c.at.Add(c.step)
	return c.at
}

// Advance moves the clock by d: forward, or back when d is negative.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(d)
}
