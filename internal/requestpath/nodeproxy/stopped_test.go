package nodeproxy

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sandgate/sandgate/internal/informer"
)

// TestStoppedPodAnswersAtOnce: a sandbox whose pod terminated (node
// eviction, spot reclaim) is answered 503 with Retry-After and a message
// naming the state, without a wake and without reaching the app.
func TestStoppedPodAnswersAtOnce(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	app := h.addUser("alice", "node-a")
	h.dir.edit("alice", func(e *informer.Entry) { e.Route.State = informer.StateStopped })
	before := len(app.log.requests())
	resp := h.get("node-a", "/u/alice/", map[string]string{"Cookie": cookie(h.session("alice"))})
	body := readAll(t, resp)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "pod stopped") {
		t.Errorf("stopped pod: %d, Retry-After %q, body %q; want 503 with Retry-After naming the stopped pod", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if after := len(app.log.requests()); after != before {
		t.Errorf("the app saw %d requests", after-before)
	}
	if n := h.auth.wakes.Load(); n != 0 {
		t.Errorf("%d wake calls for a stopped pod", n)
	}
}
