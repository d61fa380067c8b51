package nodeproxy

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/testing/sim/agentapp"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// readEvent reads an SSE stream up to its next event and returns it with
// the time it arrived.
func readEvent(r *bufio.Reader) (agentapp.Event, time.Time, error) {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return agentapp.Event{}, time.Time{}, fmt.Errorf("read event stream: %w", err)
		}
		data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: ")
		if !ok {
			continue
		}
		arrived := time.Now()
		var ev agentapp.Event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			return agentapp.Event{}, time.Time{}, fmt.Errorf("decode event %q: %w", data, err)
		}
		return ev, arrived, nil
	}
}

// TestSSEPerEvent: the proxy passes each event on as the app flushes it,
// on the pod's node and over a hop: with the app's next event an hour
// away, the first one still arrives.
func TestSSEPerEvent(t *testing.T) {
	h := newHarness(t, harnessOpts{peers: true, appEvents: time.Hour})
	h.addUser("alice", "node-a")
	for _, node := range []string{"node-a", "node-b"} {
		resp := h.get(node, "/u/alice/api/events", map[string]string{"Cookie": cookie(h.session("alice"))})
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
			t.Fatalf("via %s: status %d content type %q", node, resp.StatusCode, ct)
		}
		type read struct {
			ev  agentapp.Event
			err error
		}
		got := make(chan read, 1)
		go func() {
			ev, _, err := readEvent(bufio.NewReader(resp.Body))
			got <- read{ev, err}
		}()
		if r := testkit.Receive(t, "the first event via "+node, got); r.err != nil || r.ev.Seq != 1 {
			t.Errorf("via %s: event %+v, %v", node, r.ev, r.err)
		}
		resp.Body.Close()
	}
}
