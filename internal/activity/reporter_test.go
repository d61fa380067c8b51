package activity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestReporterPostsTrackerTable(t *testing.T) {
	got := make(chan Report, 16)
	tr := New(Options{})
	tr.Begin(keyA)
	tr.Begin(keyB)
	tr.Upgrade(keyB)
	r, err := NewReporter(ReporterOptions{
		Tracker: tr, Node: "node-1", Interval: 200 * time.Millisecond,
		Sender: senderFunc(func(_ context.Context, body []byte) (int, error) {
			rep, err := DecodeReport(bytes.NewReader(body))
			if err != nil {
				t.Errorf("undecodable report %q: %v", body, err)
				return 400, nil
			}
			got <- rep
			return 204, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	first := testkit.Receive(t, "a report", got)
	want := tr.Snapshot()
	if first.Node != "node-1" || first.SentAt == 0 {
		t.Errorf("report header %+v", first)
	}
	if diff := cmp.Diff(want, first.Entries); diff != "" {
		t.Errorf("entries (-tracker +report):\n%s", diff)
	}
	if e := first.Entries; len(e) != 2 || e[0].InFlight != 1 || e[1].OpenWebSockets != 1 {
		t.Errorf("entries %+v, want a in flight and b's WebSocket", e)
	}

	tr.End(keyA)
	for testkit.Receive(t, "a report after End", got).Entries[0].InFlight != 0 {
	}
}

// fakeAPI is an in-memory auth API Sender that answers with scripted
// statuses.
type fakeAPI struct {
	mu       sync.Mutex
	statuses []int // answered in order; the last one repeats
	times    []time.Time
	bodies   []string
}

func (f *fakeAPI) PostReport(_ context.Context, body []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.times = append(f.times, time.Now())
	f.bodies = append(f.bodies, string(body))
	return f.statuses[min(len(f.times)-1, len(f.statuses)-1)], nil
}

func (f *fakeAPI) calls() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.times...)
}

func newTestReporter(t *testing.T, api *fakeAPI, tr *Tracker, log *slog.Logger) *Reporter {
	t.Helper()
	r, err := NewReporter(ReporterOptions{Tracker: tr, Node: "node-1", Interval: 10 * time.Second, Sender: api, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReporterRetries(t *testing.T) {
	tests := []struct {
		name     string
		statuses []int
		calls    int
		ok       bool
	}{
		{"ok", []int{204}, 1, true},
		{"server error then ok", []int{503, 204}, 2, true},
		{"rotated token", []int{401, 204}, 2, true},
		{"gives up", []int{500}, DefaultAttempts, false},
		{"bad request is final", []int{400}, 1, false},
		{"forbidden is final", []int{403}, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := &fakeAPI{statuses: tt.statuses}
				err := newTestReporter(t, api, New(Options{}), nil).Send(t.Context())
				if (err == nil) != tt.ok {
					t.Errorf("Send = %v, want ok=%v", err, tt.ok)
				}
				var st *errStatus
				if !tt.ok && !errors.As(err, &st) {
					t.Errorf("error %v carries no status", err)
				}
				if n := len(api.calls()); n != tt.calls {
					t.Errorf("%d attempts, want %d", n, tt.calls)
				}
			})
		})
	}
}

func TestReporterSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{statuses: []int{204}}
		tr := New(Options{Quiet: 10 * time.Second})
		r := newTestReporter(t, api, tr, nil)
		start := time.Now()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- r.Run(ctx) }()

		time.Sleep(25 * time.Second) // reports at 0, 10, 20
		synctest.Wait()
		tr.Begin(keyA) // new work on a quiet sandbox: early report after MinGap
		time.Sleep(2 * time.Second)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		var at []time.Duration
		for _, c := range api.calls() {
			at = append(at, c.Sub(start))
		}
		want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 25 * time.Second}
		if diff := cmp.Diff(want, at); diff != "" {
			t.Errorf("report times (-want +got):\n%s", diff)
		}
		var last Report
		if err := json.Unmarshal([]byte(api.bodies[len(api.bodies)-1]), &last); err != nil || len(last.Entries) != 1 {
			t.Errorf("early report %+v (%v), want a's entry", last, err)
		}
	})
}

func TestReporterLogsFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs strings.Builder
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		err := newTestReporter(t, &fakeAPI{statuses: []int{401, 500, 403}}, New(Options{}), log).Send(t.Context())
		if err == nil {
			t.Error("Send = nil, want the last status")
		}
		if !strings.Contains(logs.String(), "activity report failed") {
			t.Errorf("logs %q: want the failure", logs.String())
		}
	})
}

// senderFunc is a Sender stand-in.
type senderFunc func(ctx context.Context, body []byte) (int, error)

func (f senderFunc) PostReport(ctx context.Context, body []byte) (int, error) { return f(ctx, body) }
