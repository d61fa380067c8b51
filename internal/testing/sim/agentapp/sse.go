package agentapp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Event is the data of one SSE event from /api/events.
type Event struct {
	// Seq numbers the events of a stream from 1, or from Last-Event-ID + 1.
	Seq int64 `json:"seq"`
	// Scheduled is when the event was due: stream start + (n-1) * interval
	// for the stream's n-th event.
	Scheduled time.Time `json:"scheduled"`
	// Sent is when the server wrote the event, so a client can measure the
	// delay to its arrival.
	Sent time.Time `json:"sent"`
}

// serveEvents streams one Event every EventInterval, the first at once, each
// flushed on its own. Events keep their schedule: a late one is sent as soon
// as possible and the next is still due at its own time. The stream ends when
// the client goes away or the App shuts down.
func (a *App) serveEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, "retry: 1000\n\n"); err != nil {
		return
	}
	if err := rc.Flush(); err != nil {
		return
	}

	seq, _ := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64)
	seq = max(seq, 0)
	interval := a.opts.EventInterval
	startWall, startMono := a.opts.Now(), time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for n := int64(0); ; n++ {
		select {
		case <-r.Context().Done():
			return
		case <-a.streams.Done():
			return
		case <-timer.C:
		}
		seq++
		data, err := json.Marshal(Event{
			Seq:       seq,
			Scheduled: startWall.Add(time.Duration(n) * interval),
			Sent:      a.opts.Now(),
		})
		if err != nil {
			return
		}
		if _, err := fmt.Fprintf(w, "id: %d\ndata: %s\n\n", seq, data); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		timer.Reset(time.Until(startMono.Add(time.Duration(n+1) * interval)))
	}
}
