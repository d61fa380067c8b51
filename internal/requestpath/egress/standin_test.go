package egress

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sandgate/sandgate/internal/informer"
	"github.com/sandgate/sandgate/internal/testing/logbuf"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// providerStandin stands in for an OpenAI-compatible provider on loopback:
// it records every request it receives and answers a completion with
// usage, or streams one event per release when the request asks to
// stream, ending with the usage only when stream_options.include_usage
// asks for it, as OpenAI does.
type providerStandin struct {
	srv     *httptest.Server
	usage   int // total_tokens reported per call
	release chan struct{}

	mu   sync.Mutex
	seen []seenRequest
}

type seenRequest struct {
	Path   string
	Header http.Header
	Body   string
}

func startProviderStandin(t *testing.T) *providerStandin {
	t.Helper()
	s := &providerStandin{usage: 30, release: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *providerStandin) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.seen = append(s.seen, seenRequest{Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: string(body)})
	s.mu.Unlock()
	var req struct {
		Stream        bool `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
	}
	json.Unmarshal(body, &req)
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		for k, v := range standinHeaders {
			w.Header().Set(k, v)
		}
		fmt.Fprintf(w, `{"id":"c1","choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`,
			s.usage/3, s.usage-s.usage/3, s.usage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	f := w.(http.Flusher)
	for i, word := range []string{"one", "two"} {
		fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":%q}}]}\n\n", word)
		f.Flush()
		if i == 0 {
			select {
			case <-s.release:
			case <-r.Context().Done():
				return
			}
		}
	}
	if req.StreamOptions.IncludeUsage {
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n", s.usage-5, s.usage)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// standinHeaders are the response headers of a completion: OpenAI's
// documented ones, and those that name the key's account.
var standinHeaders = map[string]string{
	"X-Request-Id": "req-1", "Openai-Processing-Ms": "12", "Openai-Version": "2020-10-01",
	"X-Ratelimit-Remaining-Requests": "99", "Openai-Organization": "org-shared", "Openai-Project": "proj_shared",
	"Anthropic-Organization-Id": "org-uuid", "Set-Cookie": "__cf_bm=x",
}

func (s *providerStandin) requests() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]seenRequest(nil), s.seen...)
}

// fakeCallers maps source addresses to callers, as the informer caches
// would for sandbox pods on this node.
type fakeCallers struct {
	mu sync.Mutex
	m  map[string]informer.Caller
}

func (f *fakeCallers) ByIP(ip string) (informer.Caller, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.m[ip]
	if !ok {
		return informer.Caller{}, fmt.Errorf("%w: %s", informer.ErrUnknownCaller, ip)
	}
	return c, nil
}

func (f *fakeCallers) set(ip string, c informer.Caller) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.m[ip] = c
}

func (f *fakeCallers) remove(ip string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, ip)
}

// Source addresses of the sandboxes in these tests: distinct loopback
// addresses the clients bind to.
const (
	aliceIP    = "127.0.0.11"
	bobIP      = "127.0.0.12"
	strangerIP = "127.0.0.99"
)

// env is an egress proxy on loopback in front of a provider stand-in.
type env struct {
	t        *testing.T
	provider *providerStandin
	callers  *fakeCallers
	keysDir  string
	limits   string
	logs     *logbuf.Buffer
	reg      *prometheus.Registry
	addr     string
	proxy    *Proxy
	stop     func() error // shuts the proxy down and returns Serve's error
	// fileSkew is how far the proxy's file cache clock is ahead of
	// time.Now: writing a file moves it past the recheck interval, so the
	// next call looks at the files again, as it would a second later.
	fileSkew atomic.Int64
}

func (e *env) fileClock() time.Time { return time.Now().Add(time.Duration(e.fileSkew.Load())) }

// filesChanged lets the next call see what was written to the files.
func (e *env) filesChanged() { e.fileSkew.Add(int64(fileRecheck)) }

func newEnv(t *testing.T, tweak func(*Options)) *env {
	t.Helper()
	e := &env{t: t, provider: startProviderStandin(t), keysDir: t.TempDir(), logs: &logbuf.Buffer{}, reg: prometheus.NewRegistry()}
	e.limits = filepath.Join(t.TempDir(), "limits.json")
	e.callers = &fakeCallers{m: map[string]informer.Caller{
		aliceIP: {User: "alice", Sandbox: "sb-alice", Pod: "sb-alice"},
		bobIP:   {User: "bob", Sandbox: "sb-bob", Pod: "sb-bob"},
	}}
	e.writeKey("openai", "sk-real-shared-1")
	o := Options{
		Providers:  []Provider{{Name: "openai", BaseURL: e.provider.srv.URL + "/v1"}},
		KeysDir:    e.keysDir,
		LimitsFile: e.limits,
		Default:    Limits{RequestsPerMinute: 100, TokensPerDay: 1_000_000},
		Callers:    e.callers,
		Logger:     slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Registerer: e.reg,
	}
	o.Providers[0].fill()
	if tweak != nil {
		tweak(&o)
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	p.keys.files.now = e.fileClock
	p.limits.files.now = e.fileClock
	e.proxy = p
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	var once sync.Once
	var serveErr error
	e.stop = func() error {
		once.Do(func() { cancel(); serveErr = <-done })
		return serveErr
	}
	t.Cleanup(func() {
		if err := e.stop(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// writeKey replaces a key file the way the kubelet updates a mounted
// Secret: a new file renamed over the old.
func (e *env) writeKey(name, value string) {
	e.t.Helper()
	tmp := filepath.Join(e.keysDir, "."+name+".tmp")
	if err := os.WriteFile(tmp, []byte(value+"\n"), 0o600); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(e.keysDir, name)); err != nil {
		e.t.Fatal(err)
	}
	e.filesChanged()
}

func (e *env) writeLimits(doc string) {
	e.t.Helper()
	tmp := e.limits + ".tmp"
	if err := os.WriteFile(tmp, []byte(doc), 0o600); err != nil {
		e.t.Fatal(err)
	}
	if err := os.Rename(tmp, e.limits); err != nil {
		e.t.Fatal(err)
	}
	e.filesChanged()
}

// client is an HTTP client whose connections come from ip, as a sandbox
// pod's would.
func client(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableCompression: true}}
}

// call posts body to path from ip with the placeholder key an agent holds.
func (e *env) call(ip, path, body string) *http.Response {
	e.t.Helper()
	return e.do(ip, http.MethodPost, path, body)
}

// do sends a method call to path from ip, as call does.
func (e *env) do(ip, method, path, body string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(method, "http://"+e.addr+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-placeholder")
	req.Header.Set("X-Api-Key", "sk-placeholder")
	resp, err := client(ip).Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// read returns a response's status and body.
func read(t *testing.T, resp *http.Response) (int, string) {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// auditLines returns the egress audit lines written so far.
func (e *env) auditLines() []map[string]any {
	e.t.Helper()
	return testkit.AuditLines(e.t, e.logs.String())
}
