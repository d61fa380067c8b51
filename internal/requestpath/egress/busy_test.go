package egress

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/activity"
)

// TestBusyDeclarations: an agent declares itself busy on the egress
// listener by its source address alone; the declaration reaches its own
// sandbox's activity entry, cut to BusyMax, and "done" withdraws it.
// Strangers, other methods and bad lengths are refused, and nothing of
// them is recorded.
func TestBusyDeclarations(t *testing.T) {
	tr := activity.New(activity.Options{})
	e := newEnv(t, func(o *Options) { o.Activity, o.Namespace, o.BusyMax = tr, "agents", time.Hour })
	busyUntil := func(sandbox string) time.Time {
		for _, en := range tr.Snapshot() {
			if en.Key() == (activity.Key{Namespace: "agents", Name: sandbox}) && en.BusyUntil > 0 {
				return time.UnixMilli(en.BusyUntil)
			}
		}
		return time.Time{}
	}
	answer := func(resp *http.Response) (int, map[string]any) {
		t.Helper()
		code, body := read(t, resp)
		var doc map[string]any
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatalf("answer %q is not JSON: %v", body, err)
		}
		return code, doc
	}
	near := func(got, want time.Time) bool { return got.Sub(want).Abs() < 5*time.Second }

	code, doc := answer(e.do(aliceIP, http.MethodPost, busyPath+"?for=30m", ""))
	if code != http.StatusOK || doc["max_seconds"] != float64(3600) {
		t.Fatalf("busy for 30m = %d %v", code, doc)
	}
	if got := busyUntil("sb-alice"); !near(got, time.Now().Add(30*time.Minute)) {
		t.Fatalf("alice busy until %v, want about 30 min from now", got)
	}
	if until, err := time.Parse(time.RFC3339, doc["busy_until"].(string)); err != nil || !near(until, busyUntil("sb-alice")) {
		t.Fatalf("answer's busy_until %v (%v) is not the recorded one", doc["busy_until"], err)
	}
	if _, doc = answer(e.do(aliceIP, http.MethodPost, busyPath+"?for=18000", "")); !near(busyUntil("sb-alice"), time.Now().Add(time.Hour)) {
		t.Fatalf("5 h declaration: busy until %v (answer %v), want it cut to 1 h", busyUntil("sb-alice"), doc)
	}
	if code, doc = answer(e.do(aliceIP, http.MethodDelete, busyPath, "")); code != http.StatusOK || doc["busy_until"] != nil || !busyUntil("sb-alice").IsZero() {
		t.Fatalf("done = %d %v, busy until %v", code, doc, busyUntil("sb-alice"))
	}

	for _, tt := range []struct {
		name, ip, method, query string
		want                    int
	}{
		{"stranger", "127.0.0.99", http.MethodPost, "?for=30m", http.StatusForbidden},
		{"no length", bobIP, http.MethodPost, "", http.StatusBadRequest},
		{"zero", bobIP, http.MethodPost, "?for=0s", http.StatusBadRequest},
		{"negative", bobIP, http.MethodPost, "?for=-5m", http.StatusBadRequest},
		{"not a duration", bobIP, http.MethodPost, "?for=soon", http.StatusBadRequest},
		{"GET", bobIP, http.MethodGet, "?for=30m", http.StatusMethodNotAllowed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if code, doc := answer(e.do(tt.ip, tt.method, busyPath+tt.query, "")); code != tt.want {
				t.Errorf("%s %s%s from %s = %d %v, want %d", tt.method, busyPath, tt.query, tt.ip, code, doc, tt.want)
			}
		})
	}
	if got := busyUntil("sb-bob"); !got.IsZero() {
		t.Errorf("refused declarations recorded bob busy until %v", got)
	}
	var actions []string
	for _, l := range e.auditLines() {
		if l["action"] == "busy" && l["outcome"] == outcomeOK {
			actions = append(actions, l["user"].(string))
		}
	}
	if len(actions) != 3 {
		t.Errorf("audit lines of accepted declarations: %v, want alice's three", actions)
	}
}

// TestBusyWithoutActivity: with no activity tracking the endpoint does not
// exist.
func TestBusyWithoutActivity(t *testing.T) {
	e := newEnv(t, nil)
	if code, body := read(t, e.do(aliceIP, http.MethodPost, busyPath+"?for=30m", "")); code != http.StatusNotFound {
		t.Fatalf("busy without activity tracking = %d %s, want 404", code, body)
	}
}
