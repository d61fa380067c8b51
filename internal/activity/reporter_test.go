package activity

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sandgate/sandgate/internal/testkit"
)

// received is one request the fake auth API got.
type received struct {
	auth   string
	report Report
}

func TestReporterPostsTrackerTable(t *testing.T) {
	got := make(chan received, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rep, err := DecodeReport(r.Body)
		if err != nil || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("bad report request: %s %v", r.Method, err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		got <- received{auth: r.Header.Get("Authorization"), report: rep}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("token-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tr := New(Options{})
	tr.Begin(keyA)
	tr.Begin(keyB)
	tr.Upgrade(keyB)
	r, err := NewReporter(ReporterOptions{
		Tracker: tr, Node: "node-1", URL: srv.URL, TokenFile: tokenFile, Interval: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	first := next(t, got)
	if first.auth != "Bearer token-1" {
		t.Errorf("Authorization %q, want the token file's content", first.auth)
	}
	want := tr.Snapshot()
	if first.report.Node != "node-1" || first.report.SentAt == 0 {
		t.Errorf("report header %+v", first.report)
	}
	if diff := cmp.Diff(want, first.report.Entries); diff != "" {
		t.Errorf("entries (-tracker +report):\n%s", diff)
	}
	if e := first.report.Entries; len(e) != 2 || e[0].InFlight != 1 || e[1].OpenWebSockets != 1 {
		t.Errorf("entries %+v, want a in flight and b's WebSocket", e)
	}

	// The kubelet rotates the token: the next report reads the new one.
	if err := os.WriteFile(tokenFile, []byte("token-2"), 0o600); err != nil {
		t.Fatal(err)
	}
	tr.End(keyA)
	for {
		rcv := next(t, got)
		if rcv.auth == "Bearer token-2" {
			if rcv.report.Entries[0].InFlight != 0 {
				t.Errorf("report after End still has a in flight: %+v", rcv.report.Entries[0])
			}
			break
		}
	}
}

func next(t *testing.T, ch <-chan received) received {
	t.Helper()
	return testkit.Receive(t, "a report", ch)
}

// fakeAPI is an in-memory auth API that answers with scripted statuses.
type fakeAPI struct {
	mu       sync.Mutex
	statuses []int // answered in order; the last one repeats
	times    []time.Time
	bodies   []string
}

func (f *fakeAPI) RoundTrip(r *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.times = append(f.times, time.Now())
	f.bodies = append(f.bodies, string(b))
	code := f.statuses[min(len(f.times)-1, len(f.statuses)-1)]
	return &http.Response{StatusCode: code, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
}

func (f *fakeAPI) calls() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.times...)
}

func newTestReporter(t *testing.T, api *fakeAPI, tr *Tracker) *Reporter {
	t.Helper()
	r, err := NewReporter(ReporterOptions{
		Tracker: tr, Node: "node-1", URL: "https://authapi.example/internal/activity",
		Interval: 10 * time.Second, Client: &http.Client{Transport: api},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReporterRetries(t *testing.T) {
	tests := []struct {
		name     string
		statuses []int
		calls    int
		ok       bool
	}{
		{"ok", []int{204}, 1, true},
		{"server error then ok", []int{503, 204}, 2, true},
		{"rotated token", []int{401, 204}, 2, true},
		{"gives up", []int{500}, DefaultAttempts, false},
		{"bad request is final", []int{400}, 1, false},
		{"forbidden is final", []int{403}, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := &fakeAPI{statuses: tt.statuses}
				err := newTestReporter(t, api, New(Options{})).Send(t.Context())
				if (err == nil) != tt.ok {
					t.Errorf("Send = %v, want ok=%v", err, tt.ok)
				}
				var st *errStatus
				if !tt.ok && !errors.As(err, &st) {
					t.Errorf("error %v carries no status", err)
				}
				if n := len(api.calls()); n != tt.calls {
					t.Errorf("%d attempts, want %d", n, tt.calls)
				}
			})
		})
	}
}

func TestReporterSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := &fakeAPI{statuses: []int{204}}
		tr := New(Options{Quiet: 10 * time.Second})
		r := newTestReporter(t, api, tr)
		start := time.Now()
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- r.Run(ctx) }()

		time.Sleep(25 * time.Second) // reports at 0, 10, 20
		synctest.Wait()
		tr.Begin(keyA) // new work on a quiet sandbox: early report after MinGap
		time.Sleep(2 * time.Second)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		var at []time.Duration
		for _, c := range api.calls() {
			at = append(at, c.Sub(start))
		}
		want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 25 * time.Second}
		if diff := cmp.Diff(want, at); diff != "" {
			t.Errorf("report times (-want +got):\n%s", diff)
		}
		var last Report
		if err := json.Unmarshal([]byte(api.bodies[len(api.bodies)-1]), &last); err != nil || len(last.Entries) != 1 {
			t.Errorf("early report %+v (%v), want a's entry", last, err)
		}
	})
}

func TestReporterKeepsTokenOutOfLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const secret = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0.c2ln"
		tokenFile := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(tokenFile, []byte(secret), 0o600); err != nil {
			t.Fatal(err)
		}
		var logs strings.Builder
		var mu sync.Mutex
		api := &fakeAPI{statuses: []int{401, 500, 403}}
		r, err := NewReporter(ReporterOptions{
			Tracker: New(Options{}), Node: "node-1", URL: "https://authapi.example/internal/activity", TokenFile: tokenFile,
			Client: &http.Client{Transport: api},
			Logger: slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Send(t.Context()); err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("Send = %v, want an error without the token", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if !strings.Contains(logs.String(), "activity report failed") || strings.Contains(logs.String(), secret) {
			t.Errorf("logs %q: want the failure, never the token", logs.String())
		}
	})
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// senderFunc is a Sender stand-in.
type senderFunc func(ctx context.Context, body []byte) (int, error)

func (f senderFunc) PostReport(ctx context.Context, body []byte) (int, error) { return f(ctx, body) }

// TestReporterSender: with a Sender, reports go through it (no URL
// needed), and its statuses drive the retries as an HTTP answer's do.
func TestReporterSender(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := New(Options{})
		var bodies []string
		statuses := []int{503, 204}
		r, err := NewReporter(ReporterOptions{Tracker: tr, Node: "node-1", Interval: 10 * time.Second,
			Sender: senderFunc(func(_ context.Context, body []byte) (int, error) {
				bodies = append(bodies, string(body))
				return statuses[len(bodies)-1], nil
			})})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Send(t.Context()); err != nil {
			t.Errorf("Send = %v, want nil", err)
		}
		if len(bodies) != 2 || !strings.Contains(bodies[0], `"node":"node-1"`) {
			t.Errorf("sent %q, want the report twice", bodies)
		}
	})
}
