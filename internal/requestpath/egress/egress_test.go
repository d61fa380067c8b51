package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

const completion = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`

// TestAgentCallCarriesTheRealKey: the provider gets the real key and none
// of the credentials the sandbox sent; the sandbox's response and the logs
// never hold the key.
func TestAgentCallCarriesTheRealKey(t *testing.T) {
	e := newEnv(t, nil)
	status, body := read(t, e.call(aliceIP, "/openai/chat/completions", completion))
	if status != http.StatusOK || !strings.Contains(body, `"total_tokens":30`) {
		t.Fatalf("call = %d %q", status, body)
	}
	seen := e.provider.requests()
	if len(seen) != 1 {
		t.Fatalf("provider saw %d requests, want 1", len(seen))
	}
	got := seen[0]
	if got.Path != "/v1/chat/completions" {
		t.Errorf("provider path = %q", got.Path)
	}
	if a := got.Header.Get("Authorization"); a != "Bearer sk-real-shared-1" {
		t.Errorf("provider Authorization = %q, want the real key", a)
	}
	if v := got.Header.Get("X-Api-Key"); v != "" {
		t.Errorf("the sandbox's X-Api-Key reached the provider: %q", v)
	}
	if got.Body != completion {
		t.Errorf("provider body = %q", got.Body)
	}
	if strings.Contains(body, "sk-real") || strings.Contains(e.logs.String(), "sk-real") {
		t.Error("the real key reached the sandbox or the logs")
	}
	lines := e.auditLines()
	if len(lines) != 1 {
		t.Fatalf("audit lines = %d, want 1", len(lines))
	}
	a := lines[0]
	for k, want := range map[string]any{"action": "egress", "user": "alice", "provider": "openai", "outcome": "ok",
		"status": float64(200), "total_tokens": float64(30), "key": "shared", "client": aliceIP} {
		if a[k] != want {
			t.Errorf("audit %s = %v, want %v", k, a[k], want)
		}
	}
}

func TestUnknownCallerRefused(t *testing.T) {
	e := newEnv(t, nil)
	for _, ip := range []string{strangerIP, "127.0.0.1"} {
		if status, _ := read(t, e.call(ip, "/openai/chat/completions", completion)); status != http.StatusForbidden {
			t.Errorf("call from %s = %d, want 403", ip, status)
		}
	}
	// A user suspended or deleted leaves the caches: refused at once.
	e.callers.remove(aliceIP)
	if status, _ := read(t, e.call(aliceIP, "/openai/chat/completions", completion)); status != http.StatusForbidden {
		t.Errorf("call after alice left = %d, want 403", status)
	}
	if n := len(e.provider.requests()); n != 0 {
		t.Errorf("provider saw %d requests from strangers", n)
	}
}

// startingCallers answer as caches that have not listed everything yet.
type startingCallers struct{}

func (startingCallers) ByIP(string) (informer.Caller, error) {
	return informer.Caller{}, informer.ErrNotSynced
}

// TestStartingNodeProxyAsksForRetry: a call that comes before the node
// proxy's caches are synced (it has just started) cannot be judged: 503
// with Retry-After, which model clients retry, not the 403 they give up on;
// its audit line is all it logs, not a warning per retried call.
func TestStartingNodeProxyAsksForRetry(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Callers = startingCallers{} })
	resp := e.call(aliceIP, "/openai/chat/completions", completion)
	if status, body := read(t, resp); status != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, `"type":"sandgate_egress"`) {
		t.Errorf("call = %d %q (Retry-After %q), want 503 with Retry-After", status, body, resp.Header.Get("Retry-After"))
	}
	if n, _ := testkit.Gathered(t, e.reg, "sandgate_egress_requests_total", map[string]string{"outcome": outcomeStarting}); n != 1 {
		t.Errorf("calls counted as starting = %v, want 1", n)
	}
	if logs := e.logs.String(); strings.Contains(logs, `"level":"WARN"`) {
		t.Errorf("a call while starting logged a warning; its audit line says enough: %s", logs)
	}
	if n := len(e.provider.requests()); n != 0 {
		t.Errorf("provider saw %d requests", n)
	}
}

// TestRefusals: what no provider client needs is refused before the
// provider or the budget sees it, and the connection is closed after the
// answer, so a refused caller holds nothing open.
func TestRefusals(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxBodyBytes = 1024 })
	tests := []struct {
		name, method, path, body string
		want                     int
	}{
		{"unknown provider", "POST", "/other/chat/completions", completion, http.StatusNotFound},
		{"path off the allow-list", "POST", "/openai/files", completion, http.StatusNotFound},
		{"stored responses", "GET", "/openai/responses/resp_1", "", http.StatusNotFound},
		{"dot segment", "POST", "/openai/models/../files", completion, http.StatusNotFound},
		{"escaped path", "POST", "/openai/chat%2fcompletions", completion, http.StatusNotFound},
		{"listing stored completions", "GET", "/openai/chat/completions", "", http.StatusMethodNotAllowed},
		{"posting to the models", "POST", "/openai/models", completion, http.StatusMethodNotAllowed},
		{"deleting a model", "DELETE", "/openai/models/ft-1", "", http.StatusMethodNotAllowed},
		{"ambiguous body", "POST", "/openai/chat/completions", `{"a":1,"a":2}`, http.StatusBadRequest},
		{"stored state", "POST", "/openai/chat/completions", `{"store":true}`, http.StatusForbidden},
		{"body over the cap", "POST", "/openai/chat/completions", strings.Repeat("x", 2048), http.StatusRequestEntityTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.do(aliceIP, tt.method, tt.path, tt.body)
			if status, _ := read(t, resp); status != tt.want || !resp.Close {
				t.Errorf("status = %d (connection closed %v), want %d and closed", status, resp.Close, tt.want)
			}
		})
	}
	if n := len(e.provider.requests()); n != 0 {
		t.Errorf("provider saw %d refused requests", n)
	}
	if u := e.proxy.budgets.usage("alice"); u.Requests != 0 {
		t.Errorf("refused calls took %d requests from the budget", u.Requests)
	}
}

// TestUnknownCallerWarningsLimited: a caller refused as unknown is warned
// about at most once a minute; the next warning says how many were held
// back. Every call still has its audit line.
func TestUnknownCallerWarningsLimited(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Unix(1_000_000_000, 0).UnixNano())
	e := newEnv(t, func(o *Options) { o.Now = func() time.Time { return time.Unix(0, now.Load()) } })
	warnings := func() int { return strings.Count(e.logs.String(), `"level":"WARN"`) }
	for range 3 {
		read(t, e.call(strangerIP, "/openai/chat/completions", completion))
	}
	if n := warnings(); n != 1 {
		t.Errorf("warnings after 3 calls in a minute = %d, want 1", n)
	}
	now.Add(int64(time.Minute))
	read(t, e.call(strangerIP, "/openai/chat/completions", completion))
	if n := warnings(); n != 2 || !strings.Contains(e.logs.String(), `"suppressed":2`) {
		t.Errorf("warnings a minute later = %d, want 2, the second saying 2 were held back: %s", n, e.logs.String())
	}
	if n := len(e.auditLines()); n != 4 {
		t.Errorf("audit lines = %d, want 4", n)
	}
}

// TestUpstreamStatusPassesThrough: a provider's refusal reaches the
// sandbox as it was.
func TestUpstreamStatusPassesThrough(t *testing.T) {
	e := newEnv(t, nil)
	if status, _ := read(t, e.do(aliceIP, http.MethodGet, "/openai/models/nope", "")); status != http.StatusOK {
		t.Fatalf("status = %d", status)
	}
	e.provider.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "7")
		http.Error(w, `{"error":"slow down"}`, http.StatusTooManyRequests)
	})
	resp := e.call(aliceIP, "/openai/chat/completions", completion)
	status, body := read(t, resp)
	if status != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "7" || !strings.Contains(body, "slow down") {
		t.Errorf("provider's 429 arrived as %d %q Retry-After %q", status, body, resp.Header.Get("Retry-After"))
	}
}

// TestBudgets: requests per minute and tokens per day are per user; a
// spent budget answers 429 with Retry-After, and another user's is
// untouched.
func TestBudgets(t *testing.T) {
	e := newEnv(t, nil)
	e.writeLimits(`{"users":{"alice":{"requests_per_minute":2}}}`)
	for i := range 2 {
		if status, _ := read(t, e.call(aliceIP, "/openai/chat/completions", completion)); status != http.StatusOK {
			t.Fatalf("alice's call %d = %d", i, status)
		}
	}
	resp := e.call(aliceIP, "/openai/chat/completions", completion)
	if status, _ := read(t, resp); status != http.StatusTooManyRequests {
		t.Fatalf("alice's third call in a minute = %d, want 429", status)
	}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || s < 1 || s > 60 {
		t.Errorf("Retry-After = %q, want 1-60 s", resp.Header.Get("Retry-After"))
	}
	for i := range 3 {
		if status, _ := read(t, e.call(bobIP, "/openai/chat/completions", completion)); status != http.StatusOK {
			t.Fatalf("bob's call %d = %d: alice's budget spent his", i, status)
		}
	}

	// Tokens per day, read from the provider's usage: 30 a call, and bob
	// has used 90.
	e.writeLimits(`{"default":{"tokens_per_day":140}}`)
	for i, want := range []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests} {
		resp := e.call(bobIP, "/openai/chat/completions", completion)
		if status, _ := read(t, resp); status != want {
			t.Fatalf("bob's call %d under 140 tokens a day = %d, want %d", i, status, want)
		}
		if want == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
	}
	if u := e.proxy.budgets.usage("bob"); u.Tokens != 5*30 {
		t.Errorf("bob's tokens today = %d, want %d", u.Tokens, 5*30)
	}

	// An admin's override on bob's claim (the caller carries it) wins
	// over the file: 0 lifts the limit (180 used), 200 allows one more.
	bob, err := e.callers.ByIP(bobIP)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		perDay int64
		want   int
	}{{0, http.StatusOK}, {200, http.StatusOK}, {200, http.StatusTooManyRequests}} {
		bob.TokensPerDay = &tc.perDay
		e.callers.set(bobIP, bob)
		if status, _ := read(t, e.call(bobIP, "/openai/chat/completions", completion)); status != tc.want {
			t.Errorf("bob's call with an override of %d tokens a day = %d, want %d", tc.perDay, status, tc.want)
		}
	}
}

// TestStreamArrivesChunkByChunk: the first event reaches the sandbox while
// the provider still holds the rest, and the stream's usage is counted.
func TestStreamArrivesChunkByChunk(t *testing.T) {
	e := newEnv(t, nil)
	resp := e.call(aliceIP, "/openai/chat/completions", `{"model":"m","stream":true,"messages":[]}`)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream = %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	r := bufio.NewReader(resp.Body)
	first, err := r.ReadString('\n')
	if err != nil || !strings.Contains(first, `"one"`) {
		t.Fatalf("first event = %q, %v", first, err)
	}
	close(e.provider.release) // only now does the provider send the rest
	rest := new(strings.Builder)
	if _, err := r.WriteTo(rest); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rest.String(), `"two"`) || !strings.Contains(rest.String(), "[DONE]") {
		t.Errorf("rest of the stream = %q", rest.String())
	}
	if body := e.provider.requests()[0].Body; !strings.Contains(body, `"include_usage":true`) {
		t.Errorf("streamed request did not ask for usage: %q", body)
	}
	testkit.Eventually(t, "stream's tokens counted", func() bool { return e.proxy.budgets.usage("alice").Tokens == 30 })
}

// TestKeyRotationAndUserKeys: a key replaced in the Secret's files is used
// on the next call, and a user's own key wins over the shared one.
func TestKeyRotationAndUserKeys(t *testing.T) {
	e := newEnv(t, nil)
	auth := func() string {
		reqs := e.provider.requests()
		return reqs[len(reqs)-1].Header.Get("Authorization")
	}
	read(t, e.call(aliceIP, "/openai/chat/completions", completion))
	if a := auth(); a != "Bearer sk-real-shared-1" {
		t.Fatalf("first key = %q", a)
	}
	e.writeKey("openai", "sk-real-shared-2")
	read(t, e.call(aliceIP, "/openai/chat/completions", completion))
	if a := auth(); a != "Bearer sk-real-shared-2" {
		t.Fatalf("after rotation = %q, want the new key", a)
	}
	e.writeKey("openai.bob", "sk-real-bob")
	read(t, e.call(bobIP, "/openai/chat/completions", completion))
	if a := auth(); a != "Bearer sk-real-bob" {
		t.Errorf("bob's call = %q, want his own key", a)
	}
	read(t, e.call(aliceIP, "/openai/chat/completions", completion))
	if a := auth(); a != "Bearer sk-real-shared-2" {
		t.Errorf("alice's call = %q, want the shared key", a)
	}
	lines := e.auditLines()
	if k := lines[2]["key"]; k != "user" {
		t.Errorf("audit key for bob = %v, want user", k)
	}
}

func TestMissingKeyIs503(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Providers[0].Key = "absent" })
	if status, _ := read(t, e.call(aliceIP, "/openai/chat/completions", completion)); status != http.StatusServiceUnavailable {
		t.Errorf("status = %d, want 503", status)
	}
}

// TestShutdownDrainsThenReturns: shutdown waits for an open token stream
// up to DrainTimeout, then returns while it is still open.
func TestShutdownDrainsThenReturns(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.DrainTimeout = 100 * time.Millisecond })
	resp := e.call(aliceIP, "/openai/chat/completions", `{"stream":true}`)
	r := bufio.NewReader(resp.Body)
	if first, err := r.ReadString('\n'); err != nil || !strings.Contains(first, `"one"`) {
		t.Fatalf("first event = %q, %v", first, err)
	}
	if err := e.stop(); err != nil {
		t.Fatalf("Serve = %v after the drain", err)
	}
	close(e.provider.release)
	resp.Body.Close()
}

// panicCallers panics on every lookup with a value that holds what a
// careless log would leak.
type panicCallers struct{}

func (panicCallers) ByIP(string) (informer.Caller, error) { panic(`body {"content":"SECRET"}`) }

// TestPanicAnswers500: a panic in the handler answers that call 500 in the
// refusal shape, is logged without the panic's value and counted, and the
// listener goes on serving.
func TestPanicAnswers500(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.Callers = panicCallers{} })
	for i := range 2 {
		status, body := read(t, e.call(aliceIP, "/openai/chat/completions", completion))
		if status != http.StatusInternalServerError || !strings.Contains(body, `"type":"sandgate_egress"`) {
			t.Fatalf("call %d = %d %q, want the proxy's 500", i, status, body)
		}
	}
	if n, _ := testkit.Gathered(t, e.reg, "sandgate_egress_requests_total", map[string]string{"outcome": outcomePanic}); n != 2 {
		t.Errorf("panics counted = %v, want 2", n)
	}
	if logs := e.logs.String(); !strings.Contains(logs, "handler panicked: string") || strings.Contains(logs, "SECRET") {
		t.Errorf("logs = %s", logs)
	}
}

// TestStreamUsageAskedOnlyWhereDefined: stream_options.include_usage is
// added to streamed OpenAI-style completions only; /responses (which only
// gets store: false on the shared key) and Anthropic's /messages get the
// body as the sandbox sent it.
func TestStreamUsageAskedOnlyWhereDefined(t *testing.T) {
	e := newEnv(t, func(o *Options) {
		a := Provider{Name: "anthropic", BaseURL: o.Providers[0].BaseURL, Header: "x-api-key", Paths: []string{"/messages"}}
		a.fill()
		o.Providers = append(o.Providers, a)
	})
	e.writeKey("anthropic", "sk-ant-real")
	close(e.provider.release)
	const stream, withUsage = `{"model":"m","stream":true}`, `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`
	for _, tt := range []struct{ path, body, sent string }{
		{"/openai/chat/completions", stream, withUsage},
		{"/openai/completions", stream, withUsage},
		{"/openai/chat/completions", `{"model":"m","stream":true,"stream_options":null}`, withUsage},
		{"/openai/responses", stream, `{"model":"m","stream":true,"store":false}`},
		{"/anthropic/messages", stream, stream},
	} {
		if status, _ := read(t, e.call(aliceIP, tt.path, tt.body)); status != http.StatusOK {
			t.Fatalf("%s %s = %d", tt.path, tt.body, status)
		}
		reqs := e.provider.requests()
		if got := reqs[len(reqs)-1].Body; got != tt.sent {
			t.Errorf("%s %s reached the provider as %s, want %s", tt.path, tt.body, got, tt.sent)
		}
	}
}

// TestResponseHeaders: only the documented headers come back, none that
// names the account behind the shared key.
func TestResponseHeaders(t *testing.T) {
	e := newEnv(t, nil)
	resp := e.call(aliceIP, "/openai/chat/completions", completion)
	read(t, resp)
	for h, want := range map[string]bool{
		"Content-Type": true, "X-Request-Id": true, "Openai-Processing-Ms": true, "Openai-Version": true,
		"X-Ratelimit-Remaining-Requests": true,
		"Openai-Organization":            false, "Openai-Project": false, "Anthropic-Organization-Id": false, "Set-Cookie": false,
	} {
		if got := resp.Header.Get(h) != ""; got != want {
			t.Errorf("%s passed back = %v, want %v", h, got, want)
		}
	}
}

// TestSandboxThatStopsReadingIsDropped: a write to a sandbox that has
// stopped reading fails after WriteTimeout, so the call ends (aborted)
// and the provider's connection is closed.
func TestSandboxThatStopsReadingIsDropped(t *testing.T) {
	ended := make(chan struct{})
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(ended)
		w.Header().Set("Content-Type", "text/event-stream")
		event := []byte(`data: {"choices":[{"delta":{"content":"` + strings.Repeat("x", 4096) + "\"}}]}\n\n")
		for r.Context().Err() == nil {
			if _, err := w.Write(event); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(endless.Close)
	e := newEnv(t, func(o *Options) {
		o.Providers[0].BaseURL = endless.URL + "/v1"
		o.WriteTimeout = 50 * time.Millisecond
	})
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(aliceIP)}}
	conn, err := d.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	const body = `{"stream":true}`
	fmt.Fprintf(conn, "POST /openai/chat/completions HTTP/1.1\r\nHost: egress\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	testkit.Receive(t, "the provider's stream ended", ended)
	testkit.Eventually(t, "the call audited as aborted", func() bool {
		lines := e.auditLines()
		return len(lines) == 1 && lines[0]["outcome"] == outcomeAborted
	})
}

// TestCallsInFlightCap: a user's calls open at once are capped (429 in
// the refusal shape), another user's are not, and a call that ends frees
// its place.
func TestCallsInFlightCap(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.CallsInFlight = 1 })
	r := bufio.NewReader(e.call(aliceIP, "/openai/chat/completions", `{"stream":true}`).Body)
	if first, err := r.ReadString('\n'); err != nil || !strings.Contains(first, `"one"`) {
		t.Fatalf("first event = %q, %v", first, err)
	}
	second := e.call(aliceIP, "/openai/chat/completions", completion)
	if status, body := read(t, second); status != http.StatusTooManyRequests || !strings.Contains(body, `"type":"sandgate_egress"`) ||
		second.Header.Get("Retry-After") != "1" {
		t.Errorf("alice's second call = %d %q Retry-After %q, want 429", status, body, second.Header.Get("Retry-After"))
	}
	if status, _ := read(t, e.call(bobIP, "/openai/chat/completions", completion)); status != http.StatusOK {
		t.Errorf("bob's call = %d", status)
	}
	close(e.provider.release)
	if _, err := io.Copy(io.Discard, r); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, "alice's stream audited", func() bool { return len(e.auditLines()) == 3 })
	if status, _ := read(t, e.call(aliceIP, "/openai/chat/completions", completion)); status != http.StatusOK {
		t.Errorf("alice's call after her stream = %d", status)
	}
}

// TestLimitsFileSize: a limits file past the key files' 64 KiB cap is
// applied; one past its own cap is logged once per version, and the last
// good one kept.
func TestLimitsFileSize(t *testing.T) {
	now := time.Unix(1_000_000_000, 0)
	e := newEnv(t, func(o *Options) { o.Now = func() time.Time { return now } })
	var users strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&users, `"user-%d":{"tokens_per_day":1},`, i)
	}
	e.writeLimits(`{"users":{` + users.String() + `"alice":{"requests_per_minute":1}}}`)
	for i, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		if status, _ := read(t, e.call(aliceIP, "/openai/chat/completions", completion)); status != want {
			t.Fatalf("alice's call %d under a %d-byte limits file = %d, want %d", i, users.Len(), status, want)
		}
	}
	for v := range 2 {
		e.writeLimits(strings.Repeat(" ", maxLimitsFileBytes+1+v))
		for range 3 {
			if status, _ := read(t, e.call(aliceIP, "/openai/chat/completions", completion)); status != http.StatusTooManyRequests {
				t.Fatalf("alice's call = %d, want 429 from the last good limits", status)
			}
			e.filesChanged()
		}
		if n := strings.Count(e.logs.String(), "limits file too large"); n != v+1 {
			t.Errorf("after %d oversized versions the log says so %d times", v+1, n)
		}
	}
}

// armedConn is a provider connection whose reads panic once armed, with
// a value that holds what a careless log would leak. A read that was
// waiting when it was armed panics as it returns.
type armedConn struct {
	net.Conn
	armed *atomic.Bool
}

func (c armedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if c.armed.Load() {
		panic(`stream {"content":"SECRET"}`)
	}
	return n, err
}

// TestPanicWhileStreaming: a panic while a token stream is passed on,
// after serve has returned and outside its recover, ends that stream
// only: the call is counted, audited and logged as a panic, without the
// panic's value, it gives back the user's call slot, and the listener
// goes on serving.
func TestPanicWhileStreaming(t *testing.T) {
	armed := new(atomic.Bool)
	e := newEnv(t, func(o *Options) {
		o.CallsInFlight = 1
		o.Dial = func(addr string) (net.Conn, error) {
			c, err := net.Dial("tcp", addr)
			return armedConn{Conn: c, armed: armed}, err
		}
	})
	resp := e.call(aliceIP, "/openai/chat/completions", `{"model":"m","stream":true,"messages":[]}`)
	r := bufio.NewReader(resp.Body)
	if first, err := r.ReadString('\n'); err != nil || !strings.Contains(first, `"one"`) {
		t.Fatalf("first event = %q, %v", first, err)
	}
	armed.Store(true)
	close(e.provider.release)
	if rest, err := io.ReadAll(r); err == nil || strings.Contains(string(rest), "[DONE]") {
		t.Errorf("the stream ended cleanly (%v) with %q, want it cut off", err, rest)
	}
	resp.Body.Close()
	testkit.Eventually(t, "the stream counted as a panic", func() bool {
		n, _ := testkit.Gathered(t, e.reg, "sandgate_egress_requests_total", map[string]string{"outcome": outcomePanic})
		return n == 1
	})
	if logs := e.logs.String(); !strings.Contains(logs, "panicked: string") || strings.Contains(logs, "SECRET") {
		t.Errorf("logs = %s", logs)
	}
	if lines := e.auditLines(); len(lines) != 1 || lines[0]["outcome"] != outcomePanic {
		t.Errorf("audit lines = %v, want one with outcome %s", lines, outcomePanic)
	}
	armed.Store(false)
	if status, _ := read(t, e.call(aliceIP, "/openai/chat/completions", completion)); status != http.StatusOK {
		t.Errorf("alice's next call = %d, want 200: her one call slot is free again", status)
	}
}
