package nodeproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"
)

func TestPlainSuccessesAreSummarised(t *testing.T) {
	ok := func(change func(x *exchange)) *exchange {
		x := &exchange{outcome: outcome{status: 200}, route: route{kind: routeUser, user: "alice"}}
		change(x)
		return x
	}
	for _, tc := range []struct {
		name  string
		x     *exchange
		plain bool
	}{
		{"200", ok(func(*exchange) {}), true},
		{"204", ok(func(x *exchange) { x.status = 204 }), true},
		{"redirect", ok(func(x *exchange) { x.status = 302 }), false},
		{"not modified", ok(func(x *exchange) { x.status = 304 }), false},
		{"client error", ok(func(x *exchange) { x.status = 404 }), false},
		{"server error", ok(func(x *exchange) { x.status = 502 }), false},
		{"WebSocket", ok(func(x *exchange) { x.ws = true }), false},
		{"renewed session", ok(func(x *exchange) { x.renewed = true }), false},
		{"retried after the app's 401", ok(func(x *exchange) { x.retried = true }), false},
		{"held for a wake", ok(func(x *exchange) { x.held = true }), false},
		{"client went away", ok(func(x *exchange) { x.aborted = true }), false},
		{"error", ok(func(x *exchange) { x.err = errors.New("late") }), false},
	} {
		if got := plain(tc.x); got != tc.plain {
			t.Errorf("%s: plain = %v, want %v", tc.name, got, tc.plain)
		}
	}
}

// The summary writes one line per user and route with what it counted,
// starts afresh after each line, and writes what is left when it stops.
func TestSummaryLines(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	s := newSuccessesIf(true)
	add := func(user string, kind routeKind, bytesOut int64, d time.Duration) {
		s.add(&exchange{outcome: outcome{status: 200, bytesOut: bytesOut}, route: route{kind: kind, user: user}}, d)
	}
	add("bob", routeUser, 10, time.Millisecond)
	add("alice", routeUser, 100, 3*time.Millisecond)
	add("alice", routeUser, 50, 2*time.Millisecond)
	add("", routeAuthAPI, 7, time.Millisecond)

	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.run(ctx, log, time.Hour); close(done) }()
	stop()
	<-done

	type line struct {
		Msg      string  `json:"msg"`
		User     string  `json:"user"`
		Route    string  `json:"route"`
		Status   string  `json:"status"`
		Requests int64   `json:"requests"`
		Bytes    int64   `json:"bytes_out"`
		Longest  float64 `json:"duration_ms_max"`
		Interval float64 `json:"interval_s"`
	}
	var got []line
	for _, raw := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var l line
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("line %q: %v", raw, err)
		}
		got = append(got, l)
	}
	want := []line{
		{"requests", "", "authapi", "2xx", 1, 7, 1, 3600},
		{"requests", "alice", "user", "2xx", 2, 150, 3, 3600},
		{"requests", "bob", "user", "2xx", 1, 10, 1, 3600},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines %+v, want %+v", len(got), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	buf.Reset()
	s.write(log, time.Hour)
	if buf.Len() != 0 {
		t.Errorf("a second summary with nothing counted wrote %q", buf.String())
	}
}
