package defaults

import (
	"io"
	"testing"
	"time"
)

func TestSetFillsOnlyZeroFields(t *testing.T) {
	var o struct {
		d   time.Duration
		s   string
		set int
		w   io.Writer
	}
	o.set = 7
	Set(&o.d, time.Second)
	Set(&o.s, "x")
	Set(&o.set, 3)
	Set(&o.w, io.Discard)
	if o.d != time.Second || o.s != "x" || o.set != 7 || o.w != io.Discard {
		t.Errorf("after Set: %+v", o)
	}
}

func TestClockFillsOnlyANilClock(t *testing.T) {
	var unset func() time.Time
	Clock(&unset)
	if unset == nil || time.Since(unset()) > time.Minute {
		t.Error("a nil clock is not time.Now after Clock")
	}
	fixed := func() time.Time { return time.Time{} }
	Clock(&fixed)
	if !fixed().IsZero() {
		t.Error("Clock replaced a clock that was set")
	}
}
