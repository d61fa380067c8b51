package account

import (
	"errors"
	"testing"
	"time"
)

// TestWakeSchedule: the forms the annotation takes, and when each is due.
func TestWakeSchedule(t *testing.T) {
	fri := time.Date(2026, 12, 11, 9, 0, 0, 0, time.UTC) // a Friday, 09:00
	for _, tc := range []struct {
		in       string
		from     time.Time
		wantNext time.Time
		wantErr  bool
	}{
		{in: "daily 08:30", from: fri, wantNext: time.Date(2026, 12, 12, 8, 30, 0, 0, time.UTC)},
		{in: "daily 09:30", from: fri, wantNext: time.Date(2026, 12, 11, 9, 30, 0, 0, time.UTC)},
		{in: "weekdays 08:30", from: fri, wantNext: time.Date(2026, 12, 14, 8, 30, 0, 0, time.UTC)},
		{in: "weekdays 23:59", from: fri, wantNext: time.Date(2026, 12, 11, 23, 59, 0, 0, time.UTC)},
		{in: "once 2026-12-11T10:00Z", from: fri, wantNext: time.Date(2026, 12, 11, 10, 0, 0, 0, time.UTC)},
		{in: "once 2026-12-11T08:00Z", from: fri},
		{in: "daily 24:00", wantErr: true},
		{in: "daily 8:30am", wantErr: true},
		{in: "hourly 08:30", wantErr: true},
		{in: "once 08:30", wantErr: true},
		{in: "weekdays", wantErr: true},
		{in: "", wantErr: true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			w, err := ParseWakeSchedule(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidSchedule) {
					t.Fatalf("ParseWakeSchedule(%q) = %v, %v; want ErrInvalidSchedule", tc.in, w, err)
				}
				return
			}
			if err != nil || w.String() != tc.in {
				t.Fatalf("ParseWakeSchedule(%q) = %v (%q), %v", tc.in, w, w.String(), err)
			}
			if got := w.Next(tc.from); !got.Equal(tc.wantNext) {
				t.Errorf("Next(%v) = %v, want %v", tc.from, got, tc.wantNext)
			}
			if !tc.wantNext.IsZero() && (!w.Due(tc.wantNext.Add(-time.Second), tc.wantNext) || w.Due(tc.wantNext, tc.wantNext.Add(time.Minute))) {
				t.Errorf("Due is not true exactly around %v", tc.wantNext)
			}
		})
	}
}

// FuzzParseWakeSchedule feeds claim annotations (written by the auth API
// from a user's form, but read as untrusted): an accepted schedule reads
// back as itself and its next moment is after the time asked.
func FuzzParseWakeSchedule(f *testing.F) {
	for _, s := range []string{"daily 08:30", "weekdays 23:59", "once 2026-12-11T10:00Z", "once 2026-02-30T10:00Z", "daily 8:3", ""} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 11, 9, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		w, err := ParseWakeSchedule(s)
		if err != nil {
			return
		}
		back, err := ParseWakeSchedule(w.String())
		if err != nil || back != w {
			t.Fatalf("%q parsed as %v, which reads back as %v, %v", s, w, back, err)
		}
		if n := w.Next(now); !n.IsZero() && !n.After(now) {
			t.Fatalf("%q: next %v is not after %v", s, n, now)
		}
	})
}
