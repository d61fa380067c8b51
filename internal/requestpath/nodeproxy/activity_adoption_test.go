package nodeproxy

import (
	"net/http"
	"testing"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestActivityTrackedAcrossAdoption: a request that comes before the claim
// names its sandbox (warm-pool adoption) and is held until the adopted
// sandbox is Ready counts as in flight on that sandbox until it ends.
func TestActivityTrackedAcrossAdoption(t *testing.T) {
	tracker := activity.New(activity.Options{})
	h := newHarness(t, wakeOpts(testkit.Timeout, tracker))
	h.addUser("alice", "node-a")
	adopted, err := h.dir.Lookup("alice")
	if err != nil {
		t.Fatal(err)
	}
	h.dir.edit("alice", func(e *informer.Entry) { e.Route = informer.Route{State: informer.StatePending} })
	h.auth.setOnWake(func(user string) { h.dir.set(user, adopted) })

	resp := h.get("node-a", "/u/alice/api/events", map[string]string{"Cookie": cookie(h.session("alice"))})
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("event stream: %d %s", resp.StatusCode, readAll(t, resp))
	}
	key := activity.Key{Namespace: testNS, Name: adopted.Route.Sandbox}
	inFlight := func() (int64, bool) {
		for _, e := range tracker.Snapshot() {
			if e.Key() == key {
				return e.InFlight, true
			}
		}
		return 0, false
	}
	if n, ok := inFlight(); n != 1 {
		t.Fatalf("open stream on the adopted sandbox: %d in flight (entry %v), want 1; table %+v", n, ok, tracker.Snapshot())
	}
	// The proxy learns the client left at its next event's write.
	resp.Body.Close()
	testkit.Eventually(t, "the stream's end counted", func() bool {
		n, ok := inFlight()
		return ok && n == 0
	})
	if got := h.auth.wakes.Load(); got != 1 {
		t.Errorf("%d wake calls, want 1: the request was not held across adoption", got)
	}
}
