package testkit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
)

func TestClock(t *testing.T) {
	still := NewClock(Epoch)
	still.Advance(time.Minute)
	if got := still.Now(); !got.Equal(Epoch.Add(time.Minute)) || !still.Now().Equal(got) {
		t.Errorf("standing clock read %v then moved", got)
	}
	step := NewSteppingClock(Epoch, time.Second)
	if a, b := step.Now(), step.Now(); b.Sub(a) != time.Second {
		t.Errorf("stepping clock read %v then %v", a, b)
	}
	wall := NewOffsetClock()
	wall.Advance(time.Hour)
	if d := wall.Now().Sub(time.Now()); d < 59*time.Minute || d > 61*time.Minute {
		t.Errorf("offset clock is %v ahead, want an hour", d)
	}
}

func TestPoll(t *testing.T) {
	n := 0
	if !Poll(t.Context(), Timeout, func() bool { n++; return n == 3 }) || n != 3 {
		t.Errorf("Poll stopped after %d checks", n)
	}
	if Poll(t.Context(), 10*time.Millisecond, func() bool { return false }) {
		t.Error("Poll reported a condition that never held")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if Poll(ctx, Timeout, func() bool { return false }) {
		t.Error("Poll reported a condition after its context ended")
	}
}

func TestReceive(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if got := Receive(t, "a value", ch); got != 7 {
		t.Errorf("Receive = %d, want 7", got)
	}
}

func TestObserveRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	var seen []string
	ObserveRequests(cfg, func(r *http.Request) { seen = append(seen, r.Method+" "+r.URL.Path) })
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(srv.URL + "/api")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(seen) != 1 || seen[0] != "GET /api" {
		t.Errorf("observed %v, want [GET /api]", seen)
	}
}

func TestGathered(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total"}, []string{"result", "source"})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g"})
	reg.MustRegister(c, g)
	c.WithLabelValues("ok", "log").Add(2)
	c.WithLabelValues("ok", "file").Add(3)
	c.WithLabelValues("error", "log").Add(5)
	g.Set(7)
	for _, tt := range []struct {
		name  string
		match map[string]string
		want  float64
		found bool
	}{
		{"c_total", nil, 10, true},
		{"c_total", map[string]string{"result": "ok"}, 5, true},
		{"c_total", map[string]string{"result": "ok", "source": "log"}, 2, true},
		{"c_total", map[string]string{"result": "refused"}, 0, false},
		{"g", nil, 7, true},
		{"absent", nil, 0, false},
	} {
		if got, found := Gathered(t, reg, tt.name, tt.match); got != tt.want || found != tt.found {
			t.Errorf("Gathered(%s, %v) = %v, %v; want %v, %v", tt.name, tt.match, got, found, tt.want, tt.found)
		}
	}
}
