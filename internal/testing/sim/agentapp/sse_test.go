package agentapp

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sseEvent is one parsed event plus its arrival time.
type sseEvent struct {
	id      string
	data    Event
	arrived time.Time
}

// openEvents starts an SSE request and returns a reader of its events.
func openEvents(t *testing.T, ta *testApp, cookie *http.Cookie, lastID string) (*http.Response, func() (sseEvent, error)) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, ta.base+"/api/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(cookie)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := ta.client.Do(req)
	if err != nil {
		t.Fatalf("GET /api/events: %v", err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	br := bufio.NewReader(resp.Body)
	next := func() (sseEvent, error) {
		var ev sseEvent
		var data string
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return ev, err
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "" && data != "":
				ev.arrived = time.Now()
				return ev, json.Unmarshal([]byte(data), &ev.data)
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				data = strings.TrimPrefix(line, "data: ")
			}
		}
	}
	return resp, next
}

func TestEventsArriveOnSchedule(t *testing.T) {
	const (
		interval = 100 * time.Millisecond
		count    = 8
		// Generous: the machine may be busy building; the point is that
		// events are neither batched up front nor held back for seconds.
		slack = 2 * time.Second
	)
	opts := Defaults()
	opts.EventInterval = interval
	ta := startApp(t, opts)
	cookie := ta.login()

	start := time.Now()
	resp, next := openEvents(t, ta, cookie, "")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, type %q; want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var events []sseEvent
	for range count {
		ev, err := next()
		if err != nil {
			t.Fatalf("event %d: %v", len(events)+1, err)
		}
		events = append(events, ev)
	}

	first := events[0].data.Scheduled
	for i, ev := range events {
		seq := int64(i + 1)
		if ev.data.Seq != seq || ev.id != strconv.FormatInt(seq, 10) {
			t.Fatalf("event %d: seq %d, id %q; want %d", i+1, ev.data.Seq, ev.id, seq)
		}
		// The schedule itself: a fixed grid from the first event.
		if got, want := ev.data.Scheduled.Sub(first), time.Duration(i)*interval; got != want {
			t.Errorf("event %d scheduled at +%v, want +%v", seq, got, want)
		}
		// Sent at (never before) its scheduled time; the small negative
		// allowance covers wall-clock slew against the monotonic timer.
		if late := ev.data.Sent.Sub(ev.data.Scheduled); late < -10*time.Millisecond || late > slack {
			t.Errorf("event %d sent %v after its scheduled time", seq, late)
		}
		// Flushed on its own: it arrives soon after it was sent.
		if delay := ev.arrived.Sub(ev.data.Sent); delay > slack {
			t.Errorf("event %d arrived %v after it was sent", seq, delay)
		}
	}
	// The client sees the spacing too: the last event cannot arrive before
	// its slot.
	if span := events[count-1].arrived.Sub(start); span < (count-1)*interval || span > (count-1)*interval+slack {
		t.Errorf("event %d arrived %v after the request, want about %v", count, span, (count-1)*interval)
	}
}

func TestEventsResumeAfterLastEventID(t *testing.T) {
	opts := Defaults()
	opts.EventInterval = 20 * time.Millisecond
	ta := startApp(t, opts)
	_, next := openEvents(t, ta, ta.login(), "41")
	for want := int64(42); want < 45; want++ {
		ev, err := next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.data.Seq != want {
			t.Fatalf("seq %d, want %d", ev.data.Seq, want)
		}
	}
}

func TestEventsEndOnShutdown(t *testing.T) {
	opts := Defaults()
	opts.EventInterval = 20 * time.Millisecond
	ta := startApp(t, opts)
	_, next := openEvents(t, ta, ta.login(), "")
	if _, err := next(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ta.stop() }()
	for {
		if _, err := next(); err != nil {
			if err != io.EOF {
				t.Errorf("stream ended with %v, want EOF", err)
			}
			break
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
}
