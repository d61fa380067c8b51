package account

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sandgate/sandgate/internal/sandboxapi/extensions"
)

// AnnotationWakeSchedule is when the owner wants their agent woken before
// they arrive (WakeSchedule's String); the idle sweep's leader wakes it.
const AnnotationWakeSchedule = "sandgate.io/wake-schedule"

// The repeats of a WakeSchedule.
const (
	RepeatOnce     = "once"
	RepeatDaily    = "daily"
	RepeatWeekdays = "weekdays"
)

// ErrInvalidSchedule means a wake schedule does not parse.
var ErrInvalidSchedule = errors.New("invalid wake schedule")

// WakeSchedule is a time of day in UTC and how it repeats: once (on the
// day of At), every day, or Monday to Friday.
type WakeSchedule struct {
	Repeat string
	// At is the moment, for once; for the others only its hour and minute
	// count.
	At time.Time
}

// ParseWakeSchedule reads "once 2026-12-08T08:30Z", "daily 08:30" or
// "weekdays 08:30" (UTC).
func ParseWakeSchedule(s string) (WakeSchedule, error) {
	repeat, at, ok := strings.Cut(s, " ")
	if !ok || len(s) > 40 {
		return WakeSchedule{}, fmt.Errorf("%w: want \"<once|daily|weekdays> <time>\"", ErrInvalidSchedule)
	}
	switch repeat {
	case RepeatOnce:
		t, err := time.Parse("2006-01-02T15:04Z", at)
		if err != nil {
			return WakeSchedule{}, fmt.Errorf("%w: once needs a UTC date and time, 2006-01-02T15:04Z", ErrInvalidSchedule)
		}
		return WakeSchedule{Repeat: repeat, At: t}, nil
	case RepeatDaily, RepeatWeekdays:
		t, err := ParseTimeOfDay(at)
		if err != nil {
			return WakeSchedule{}, err
		}
		return WakeSchedule{Repeat: repeat, At: t}, nil
	}
	return WakeSchedule{}, fmt.Errorf("%w: repeat %q is not once, daily or weekdays", ErrInvalidSchedule, repeat)
}

// ParseTimeOfDay reads "HH:MM" (UTC) as that time on the zero day.
func ParseTimeOfDay(s string) (time.Time, error) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: a time of day is HH:MM, 24-hour, UTC", ErrInvalidSchedule)
	}
	return t, nil
}

// String is the annotation's form, which ParseWakeSchedule reads back.
func (w WakeSchedule) String() string {
	if w.Repeat == RepeatOnce {
		return w.Repeat + " " + w.At.UTC().Format("2006-01-02T15:04Z")
	}
	return w.Repeat + " " + w.At.Format("15:04")
}

// Next is the schedule's first moment after t; zero when there is none
// (a once that has passed).
func (w WakeSchedule) Next(t time.Time) time.Time {
	t = t.UTC()
	if w.Repeat == RepeatOnce {
		if w.At.After(t) {
			return w.At
		}
		return time.Time{}
	}
	day := time.Date(t.Year(), t.Month(), t.Day(), w.At.Hour(), w.At.Minute(), 0, 0, time.UTC)
	for i := 0; i < 8; i, day = i+1, day.AddDate(0, 0, 1) {
		if !day.After(t) {
			continue
		}
		if wd := day.Weekday(); w.Repeat == RepeatWeekdays && (wd == time.Saturday || wd == time.Sunday) {
			continue
		}
		return day
	}
	return time.Time{}
}

// Due reports whether a moment of the schedule falls in (from, to].
func (w WakeSchedule) Due(from, to time.Time) bool {
	n := w.Next(from)
	return !n.IsZero() && !n.After(to)
}

// WakeScheduleOf reads c's AnnotationWakeSchedule; ok is false when c is
// nil, has none, or it does not parse.
func WakeScheduleOf(c *extensions.SandboxClaim) (WakeSchedule, bool) {
	if c == nil {
		return WakeSchedule{}, false
	}
	s, ok := c.Annotations[AnnotationWakeSchedule]
	if !ok {
		return WakeSchedule{}, false
	}
	w, err := ParseWakeSchedule(s)
	return w, err == nil
}
