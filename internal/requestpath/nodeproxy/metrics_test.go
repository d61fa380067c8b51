package nodeproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sandgate/sandgate/internal/jwt"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// series returns the metric name's series on reg, by their labels joined
// as name=value pairs.
func series(t *testing.T, reg prometheus.Gatherer, name string) map[string]*dto.Metric {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.Metric{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			key := ""
			for _, l := range m.GetLabel() {
				key += l.GetName() + "=" + l.GetValue() + " "
			}
			out[key] = m
		}
	}
	return out
}

// durationCounts returns how many requests the latency histogram observed
// per route.
func durationCounts(t *testing.T, reg prometheus.Gatherer) map[string]uint64 {
	t.Helper()
	counts := map[string]uint64{}
	for key, m := range series(t, reg, "sandgate_nodeproxy_request_duration_seconds") {
		counts[key] = m.GetHistogram().GetSampleCount()
	}
	return counts
}

func gaugeValue(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	for _, m := range series(t, reg, name) {
		return m.GetGauge().GetValue()
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// TestRequestDurationByRoute: a finished request is observed once in the
// latency histogram under its route kind; a WebSocket is not.
func TestRequestDurationByRoute(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.addUser("alice", "node-a")
	reg := h.nodes["node-a"].reg
	session := cookie(h.session("alice"))

	if resp := h.get("node-a", "/u/alice/", map[string]string{"Cookie": session}); resp.StatusCode != 200 {
		t.Fatalf("user request %d", resp.StatusCode)
	} else {
		readAll(t, resp)
	}
	readAll(t, h.get("node-a", "/login", nil))
	c, _, err := h.dialWS("node-a", "/u/alice/api/ws", http.Header{"Cookie": {session}})
	if err != nil {
		t.Fatal(err)
	}
	c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
	c.Close()
	testkit.Eventually(t, "the WebSocket counted", func() bool {
		return len(series(t, reg, "sandgate_nodeproxy_requests_total")) == 3
	})

	want := map[string]uint64{"route=user ": 1, "route=authapi ": 1}
	for route, n := range durationCounts(t, reg) {
		if n != want[route] {
			t.Errorf("%s observed %d times, want %d", route, n, want[route])
		}
	}
	if _, ok := durationCounts(t, reg)["route="+routeWebSocket+" "]; ok {
		t.Error("WebSocket route observed in the latency histogram")
	}
}

// TestOpenStreamsGauge: an event stream counts while it is bridged and is
// observed in the latency histogram once it ends.
func TestOpenStreamsGauge(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.addUser("alice", "node-a")
	reg := h.nodes["node-a"].reg
	if v := gaugeValue(t, reg, "sandgate_nodeproxy_open_streams"); v != 0 {
		t.Fatalf("open streams before any: %v", v)
	}
	stream := h.get("node-a", "/u/alice/api/events", map[string]string{"Cookie": cookie(h.session("alice"))})
	if stream.StatusCode != 200 {
		t.Fatalf("event stream %d", stream.StatusCode)
	}
	buf := make([]byte, 1)
	if _, err := io.ReadFull(stream.Body, buf); err != nil {
		t.Fatalf("read event stream: %v", err)
	}
	if v := gaugeValue(t, reg, "sandgate_nodeproxy_open_streams"); v != 1 {
		t.Errorf("open streams while one is bridged: %v, want 1", v)
	}
	if n := durationCounts(t, reg)["route=user "]; n != 0 {
		t.Errorf("open stream already observed %d times", n)
	}
	stream.Body.Close()
	testkit.Eventually(t, "the ended stream observed", func() bool { return durationCounts(t, reg)["route=user "] == 1 })
	if v := gaugeValue(t, reg, "sandgate_nodeproxy_open_streams"); v != 0 {
		t.Errorf("open streams after it ended: %v, want 0", v)
	}
}

// TestJWKSRefreshGauge: the gauge reads the fetcher's last successful
// fetch: 0 before it, its time after, unchanged by a failed fetch.
func TestJWKSRefreshGauge(t *testing.T) {
	ring := jwt.NewKeyRing(time.Now())
	var down atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		data, _ := ring.JWKS()
		w.Write(data)
	}))
	defer srv.Close()
	clk := testkit.NewOffsetClock()
	f, err := jwt.NewJWKSFetcher(jwt.FetcherOptions{URL: srv.URL, Client: srv.Client(), MinRefreshInterval: time.Second, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{modify: func(o *Options) { o.JWKSRefreshed = f.LastRefresh }})
	reg := h.nodes["node-a"].reg
	gauge := func() float64 { return gaugeValue(t, reg, "sandgate_nodeproxy_jwks_last_refresh_timestamp_seconds") }
	if v := gauge(); v != 0 {
		t.Fatalf("gauge before any fetch: %v, want 0", v)
	}

	// An unknown kid makes the fetcher fetch (once per MinRefreshInterval).
	f.PublicKey("unknown")
	fetched := f.LastRefresh()
	if fetched.IsZero() || gauge() != float64(fetched.UnixNano())/1e9 {
		t.Fatalf("gauge after a fetch: %v, want %v", gauge(), fetched)
	}
	clk.Advance(time.Minute)
	down.Store(true)
	if _, err := f.PublicKey("unknown"); err == nil {
		t.Fatal("lookup of an unknown kid succeeded")
	}
	if v := gauge(); v != float64(fetched.UnixNano())/1e9 {
		t.Errorf("gauge after a failed fetch: %v, want %v", v, float64(fetched.UnixNano())/1e9)
	}
	clk.Advance(time.Minute)
	down.Store(false)
	f.PublicKey("unknown")
	if again := f.LastRefresh(); !again.After(fetched) || gauge() != float64(again.UnixNano())/1e9 {
		t.Errorf("gauge after the fetcher recovered: %v, want %v", gauge(), again)
	}
}

// TestJWKSRefreshGaugeWithoutSource: without JWKSRefreshed the gauge is
// still exported, as 0.
func TestJWKSRefreshGaugeWithoutSource(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	if v := gaugeValue(t, h.nodes["node-a"].reg, "sandgate_nodeproxy_jwks_last_refresh_timestamp_seconds"); v != 0 {
		t.Errorf("gauge without a source: %v, want 0", v)
	}
}

// TestObserveRequestDoesNotAllocate: the latency histogram's observers are
// resolved once, not per request.
func TestObserveRequestDoesNotAllocate(t *testing.T) {
	m, err := newMetrics(nil, gauges{openStreams: func() int { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	x := &exchange{route: route{kind: routeUser}}
	if n := testing.AllocsPerRun(100, func() { m.observeRequest(x, time.Millisecond) }); n != 0 {
		t.Errorf("observeRequest allocates %v times per request", n)
	}
}
