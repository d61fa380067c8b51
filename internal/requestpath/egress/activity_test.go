package egress

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/activity"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// TestModelCallsAreActivity: an admitted call is work in flight on its
// sandbox from admission to the stream's last byte, then its last
// activity, with the user's model tokens today; a refused call is no
// activity.
func TestModelCallsAreActivity(t *testing.T) {
	tr := activity.New(activity.Options{})
	e := newEnv(t, func(o *Options) { o.Activity, o.Namespace = tr, "agents" })
	entry := func(sandbox string) (activity.Entry, bool) {
		for _, en := range tr.Snapshot() {
			if en.Key() == (activity.Key{Namespace: "agents", Name: sandbox}) {
				return en, true
			}
		}
		return activity.Entry{}, false
	}

	resp := e.call(aliceIP, "/openai/chat/completions", `{"model":"m","stream":true,"messages":[]}`)
	r := bufio.NewReader(resp.Body)
	if first, err := r.ReadString('\n'); err != nil || !strings.Contains(first, `"one"`) {
		t.Fatalf("first event = %q, %v", first, err)
	}
	if en, ok := entry("sb-alice"); !ok || en.InFlight != 1 || en.ModelCalls != 1 || en.LastActivity == 0 || en.LastModelCall == 0 {
		t.Fatalf("mid-stream, alice's sandbox = %+v (found %v), want 1 in flight, a model call", en, ok)
	}
	close(e.provider.release)
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "the stream's end recorded", func() bool {
		en, ok := entry("sb-alice")
		return ok && en.InFlight == 0 && en.ModelCalls == 0
	})
	if en, _ := entry("sb-alice"); en.ModelTokens != 30 || en.ModelTokensDay != time.Now().Unix()/86400 {
		t.Errorf("alice's sandbox after one call: %d model tokens on day %d, want 30 today", en.ModelTokens, en.ModelTokensDay)
	}

	if resp := e.call(bobIP, "/openai/no/such/path", `{}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("refused call = %d, want 404", resp.StatusCode)
	}
	if en, ok := entry("sb-bob"); ok {
		t.Errorf("a refused call counted as bob's activity: %+v", en)
	}
}
