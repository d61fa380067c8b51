package handshake

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandgate/sandgate/internal/testing/logbuf"
	"github.com/sandgate/sandgate/internal/testing/testkit"
)

// harness is a Handshaker wired to a crafted log directory and a fake app.
type harness struct {
	t      *testing.T
	h      *Handshaker
	app    *fakeApp
	logs   *podLogs
	crier  *crier
	logBuf *logbuf.Buffer
	token  string
	cookie string // Set-Cookie value name=value the app sends
	target Target
	skew   atomic.Int64 // how far the Handshaker's clock is ahead, in ns
}

// advance moves the Handshaker's clock (not the exchange's cookie
// clock) forward by d.
func (x *harness) advance(d time.Duration) { x.skew.Add(int64(d)) }

const testAddr = "10.1.2.3:3080"

func newHarness(t *testing.T, mod func(*Options)) *harness {
	t.Helper()
	x := &harness{t: t, logs: newPodLogs(t), crier: newCrier(), logBuf: &logbuf.Buffer{}}
	x.token = testToken("launch " + t.Name())
	x.cookie = "dsh-auth-3080=" + testToken("cookie "+t.Name())
	x.logs.write("0.log", x.crier.out("booting"), x.crier.out(launchLine(x.token)), x.crier.out("ready"))
	x.app = newFakeApp(t, x.token, x.cookie+"; Path=/; HttpOnly; SameSite=Lax")
	o := Options{
		LogRoot:    x.logs.root,
		Dial:       x.app.dial,
		Timeout:    2 * time.Second,
		Logger:     slog.New(slog.NewJSONHandler(x.logBuf, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Registerer: prometheus.NewRegistry(),
	}
	if mod != nil {
		mod(&o)
	}
	h, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	h.now = func() time.Time { return time.Now().Add(time.Duration(x.skew.Load())) }
	x.h = h
	x.target = testTarget(testAddr)
	return x
}

// restartApp simulates a container restart: a new <n>.log with a new
// token that the app now accepts, and a new cookie.
func (x *harness) restartApp(n string) {
	x.token = testToken("restart " + n + x.t.Name())
	x.cookie = "dsh-auth-3080=" + testToken("cookie restart "+n+x.t.Name())
	x.logs.write(n+".log", x.crier.out(launchLine(x.token)))
	x.app.set(x.token, x.cookie)
}

func (x *harness) mustCookie(t Target) string {
	x.t.Helper()
	c, err := x.h.Cookie(context.Background(), t)
	if err != nil {
		x.t.Fatalf("Cookie: %v", err)
	}
	return c
}

func (x *harness) wantExchanges(n int32) {
	x.t.Helper()
	if got := x.app.exchanges.Load(); got != n {
		x.t.Errorf("app saw %d exchanges, want %d", got, n)
	}
}

func counter(c prometheus.Collector) float64 { return testutil.ToFloat64(c) }

func TestCookieExchange(t *testing.T) {
	x := newHarness(t, nil)
	x.app.set(x.token,
		x.cookie+"; Path=/; HttpOnly",
		"dsh-auth-csrf=abc123; Path=/",
		"theme=dark; Path=/",             // not an auth cookie
		"dsh-auth-old=; Max-Age=0",       // being deleted
		"dsh-auth-bad=has space; Path=/", // invalid value
	)
	got := x.mustCookie(x.target)
	if want := x.cookie + "; dsh-auth-csrf=abc123"; got != want {
		t.Errorf("cookie = %q, want %q", got, want)
	}
	seen := x.app.seen.Last()
	want := seenRequest{
		uri:            "/?token=" + x.token,
		host:           "gw.example.com",
		forwardedFor:   "203.0.113.7",
		forwardedProto: "https",
		forwardedHost:  "gw.example.com",
	}
	if seen != want {
		t.Errorf("app saw %+v\nwant %+v", seen, want)
	}
	if v := counter(x.h.metrics.handshakes.WithLabelValues(resultOK, SourceLog)); v != 1 {
		t.Errorf("ok handshakes = %v", v)
	}
	if v := counter(x.h.metrics.logBytesRead); v <= 0 {
		t.Errorf("log bytes read = %v", v)
	}
}

func TestCookieHostDefaultsToAddr(t *testing.T) {
	x := newHarness(t, nil)
	tg := x.target
	tg.Host, tg.ForwardedFor, tg.ForwardedProto, tg.ForwardedHost = "", "", "", ""
	x.mustCookie(tg)
	if seen := x.app.seen.Last(); seen.host != testAddr || seen.forwardedFor != "" || seen.forwardedHost != "" {
		t.Errorf("app saw %+v", seen)
	}
}

func TestCookieCached(t *testing.T) {
	x := newHarness(t, nil)
	first := x.mustCookie(x.target)
	second := x.mustCookie(x.target)
	if first != second {
		t.Errorf("cached cookie differs: %q vs %q", first, second)
	}
	x.wantExchanges(1)
	if hits, misses := counter(x.h.metrics.cacheLookups.WithLabelValues("hit")), counter(x.h.metrics.cacheLookups.WithLabelValues("miss")); hits != 1 || misses != 1 {
		t.Errorf("hits %v misses %v, want 1 and 1", hits, misses)
	}

	// The key is (user, pod UID, Host): other values do their own
	// handshake.
	other := x.target
	other.Host = "other.example.com"
	x.mustCookie(other)
	other = x.target
	other.User = "alice"
	x.mustCookie(other)
	x.wantExchanges(3)
	// Forwarded headers are not part of the key.
	other = x.target
	other.ForwardedFor = "198.51.100.1"
	x.mustCookie(other)
	x.wantExchanges(3)
}

func TestCookieExpiry(t *testing.T) {
	x := newHarness(t, nil)
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	x.h.now, x.h.ex.now = clock, clock
	x.app.set(x.token, x.cookie+"; Max-Age=60")
	x.mustCookie(x.target)
	now = now.Add(29 * time.Second)
	x.mustCookie(x.target)
	x.wantExchanges(1)
	now = now.Add(2 * time.Second) // within expirySkew of the end
	x.mustCookie(x.target)
	x.wantExchanges(2)
}

func TestRefresh(t *testing.T) {
	x := newHarness(t, nil)
	stale := x.mustCookie(x.target)
	x.restartApp("1")

	// The cached cookie is still served until the upstream's 401.
	if got := x.mustCookie(x.target); got != stale {
		t.Fatalf("cache changed before refresh")
	}
	fresh, err := x.h.Refresh(context.Background(), x.target, stale)
	if err != nil {
		t.Fatal(err)
	}
	if fresh != x.cookie {
		t.Errorf("refreshed cookie %q, want %q", fresh, x.cookie)
	}
	x.wantExchanges(2)

	// A second request that failed with the same stale cookie gets the
	// new one without another handshake.
	again, err := x.h.Refresh(context.Background(), x.target, stale)
	if err != nil || again != fresh {
		t.Errorf("second refresh: %q, %v", again, err)
	}
	x.wantExchanges(2)
	if got := x.mustCookie(x.target); got != fresh {
		t.Errorf("cache holds %q after refresh", got)
	}
	// An empty stale cookie always redoes the handshake.
	if _, err := x.h.Refresh(context.Background(), x.target, ""); err != nil {
		t.Fatal(err)
	}
	x.wantExchanges(3)
}

func TestForget(t *testing.T) {
	x := newHarness(t, nil)
	alice := x.target
	alice.User = "alice"
	x.mustCookie(x.target)
	x.mustCookie(alice)
	x.wantExchanges(2)

	x.h.ForgetUser("alice")
	x.mustCookie(x.target)
	x.wantExchanges(2)
	x.mustCookie(alice)
	x.wantExchanges(3)

	x.h.ForgetPod("ffffffff-ffff-4fff-8fff-ffffffffffff")
	x.mustCookie(x.target)
	x.mustCookie(alice)
	x.wantExchanges(3)

	x.h.ForgetPod(testUID)
	x.mustCookie(x.target)
	x.mustCookie(alice)
	x.wantExchanges(5)
}

func TestForgetWinsOverFlight(t *testing.T) {
	x := newHarness(t, nil)
	entered, release := x.app.hold()
	done := make(chan error, 1)
	go func() {
		_, err := x.h.Cookie(context.Background(), x.target)
		done <- err
	}()
	<-entered
	x.h.ForgetPod(testUID) // the pod is deleted mid-handshake
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	x.app.mu.Lock()
	x.app.gate = nil
	x.app.mu.Unlock()
	x.mustCookie(x.target)
	x.wantExchanges(2) // the in-flight result was not cached
}

func TestSingleflight(t *testing.T) {
	x := newHarness(t, nil)
	entered, release := x.app.hold()
	const n = 16
	var wg sync.WaitGroup
	results := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { results[i], errs[i] = x.h.Cookie(context.Background(), x.target) })
	}
	<-entered
	// Let every caller miss the cache before the one exchange returns.
	misses := x.h.metrics.cacheLookups.WithLabelValues("miss")
	testkit.Eventually(t, "every caller missed the cache", func() bool { return counter(misses) >= n })
	release()
	wg.Wait()
	for i := range n {
		if errs[i] != nil || results[i] != x.cookie {
			t.Fatalf("caller %d: %q, %v", i, results[i], errs[i])
		}
	}
	x.wantExchanges(1)
	if v := counter(x.h.metrics.handshakes.WithLabelValues(resultOK, SourceLog)); v != 1 {
		t.Errorf("%v handshakes, want 1", v)
	}
}

func TestCallerContextEndsWait(t *testing.T) {
	x := newHarness(t, nil)
	entered, release := x.app.hold()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := x.h.Cookie(ctx, x.target)
		done <- err
	}()
	<-entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	// The shared handshake finishes for the others and is cached.
	release()
	x.h.Close()
	if _, ok := x.h.cache.get(x.target.key(), time.Now()); !ok {
		t.Error("handshake finished after its caller left was not cached")
	}
}

func TestCookieErrors(t *testing.T) {
	tests := []struct {
		name  string
		setup func(x *harness)
		want  error
	}{
		{"no token in logs", func(x *harness) {
			x.logs.write("1.log", x.crier.out("restarted, not listening yet"))
		}, ErrNoToken},
		{"no logs", func(x *harness) {
			x.target.PodUID = "ffffffff-ffff-4fff-8fff-ffffffffffff"
		}, ErrNoLogs},
		{"invalid ref", func(x *harness) { x.target.Pod = "../../etc" }, ErrInvalidRef},
		{"token rejected", func(x *harness) { x.app.set("another token", x.cookie) }, ErrTokenRefused},
		{"not a redirect", func(x *harness) { x.app.status = 200 }, ErrExchange},
		{"no cookie", func(x *harness) { x.app.set(x.token) }, ErrNoCookie},
		{"only other cookies", func(x *harness) { x.app.set(x.token, "session=1", "dsh-authx=2") }, ErrNoCookie},
		{"cookie deleted", func(x *harness) { x.app.set(x.token, x.cookie+"; Max-Age=0") }, ErrNoCookie},
		{"cookie expired", func(x *harness) {
			x.app.set(x.token, x.cookie+"; Expires=Thu, 01 Jan 2015 00:00:00 GMT")
		}, ErrNoCookie},
		{"malformed response", func(x *harness) { x.app.raw = "HTTP/1.1 banana\r\nSet-Cookie: " + x.cookie + "\r\n\r\n" }, ErrExchange},
		{"dial refused", func(x *harness) {
			x.h.ex.client.Dial = func(string) (net.Conn, error) {
				return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
			}
		}, ErrExchange},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := newHarness(t, nil)
			tc.setup(x)
			_, err := x.h.Cookie(context.Background(), x.target)
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			// Failures are remembered for FailureTTL, then the next
			// call tries again, except with a token the app refused
			// (see TestRefusedTokenNotRetried).
			before := x.app.exchanges.Load()
			if _, again := x.h.Cookie(context.Background(), x.target); !errors.Is(again, tc.want) || x.app.exchanges.Load() != before {
				t.Errorf("within FailureTTL: %v after %d more exchanges, want the remembered error", again, x.app.exchanges.Load()-before)
			}
			x.advance(DefaultFailureTTL)
			x.h.Cookie(context.Background(), x.target)
			if tc.want == ErrExchange || tc.want == ErrNoCookie {
				if x.app.exchanges.Load() == before && tc.name != "dial refused" {
					t.Error("failed exchange still remembered after FailureTTL")
				}
			}
			if v := counter(x.h.metrics.handshakes.WithLabelValues(resultOf(tc.want), SourceLog)); v < 1 {
				t.Errorf("no %s handshake counted", resultOf(tc.want))
			}
		})
	}
}

func TestExchangeTimeout(t *testing.T) {
	x := newHarness(t, func(o *Options) { o.Timeout = 100 * time.Millisecond })
	_, release := x.app.hold()
	defer release()
	_, err := x.h.Cookie(context.Background(), x.target)
	if !errors.Is(err, ErrExchange) || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("got %v, want a timed-out exchange", err)
	}
}

func TestTokenRotatedOutOfCurrentFile(t *testing.T) {
	x := newHarness(t, nil)
	// Rotate: the launch line now lives in a compressed older file and the
	// current file holds only later output.
	x.logs.writeGzip("0.log.20260801-110000.gz", x.crier.out("booting"), x.crier.out(launchLine(x.token)))
	var lines []string
	for range 50 {
		lines = append(lines, x.crier.out("GET /api/sessions 200"))
	}
	x.logs.write("0.log", lines...)
	if got := x.mustCookie(x.target); got != x.cookie {
		t.Errorf("got %q", got)
	}
}

// TestSecretsNeverLogged runs successes and every kind of failure with a
// Debug logger and checks that neither the launch token nor the upstream
// cookie shows up in a log line or an error.
func TestSecretsNeverLogged(t *testing.T) {
	x := newHarness(t, nil)
	secrets := func() []string {
		_, value, _ := strings.Cut(x.cookie, "=")
		return []string{x.token, value}
	}
	var all []string
	var errs []error
	check := func(_ string, err error) {
		all = append(all, secrets()...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	check(x.h.Cookie(context.Background(), x.target))
	check(x.h.Cookie(context.Background(), x.target))
	check(x.h.Refresh(context.Background(), x.target, ""))

	x.app.set("wrong", x.cookie) // token rejected
	check(x.h.Refresh(context.Background(), x.target, ""))
	x.h.ForgetPod(testUID) // let the failures below exchange the token again
	x.app.set(x.token, x.cookie+"; Max-Age=0")
	check(x.h.Refresh(context.Background(), x.target, ""))
	x.app.raw = "HTTP/1.1 banana\r\nSet-Cookie: " + x.cookie + "\r\nX-Token: " + x.token + "\r\n\r\n"
	check(x.h.Refresh(context.Background(), x.target, ""))
	x.app.raw = "HTTP/1.1 303 See Other\r\nSet-Cookie: " + x.cookie + "\r\nbroken\r\n\r\n"
	check(x.h.Refresh(context.Background(), x.target, ""))
	x.app.raw = ""
	x.restartApp("1")
	check(x.h.Refresh(context.Background(), x.target, ""))

	if len(errs) < 3 {
		t.Fatalf("only %d failures exercised", len(errs))
	}
	out := x.logBuf.String()
	if !strings.Contains(out, `"msg":"handshake done"`) || !strings.Contains(out, `"msg":"handshake failed"`) ||
		!strings.Contains(out, `"msg":"launch token refused by the app"`) {
		t.Fatalf("expected both success and failure logs, got:\n%s", out)
	}
	for _, s := range all {
		if strings.Contains(out, s) {
			t.Errorf("secret %.8s... appears in the log:\n%s", s, out)
		}
		for _, err := range errs {
			if strings.Contains(err.Error(), s) {
				t.Errorf("secret %.8s... appears in error %q", s, err)
			}
		}
	}
}

func TestClose(t *testing.T) {
	x := newHarness(t, nil)
	x.mustCookie(x.target)
	if err := x.h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := x.h.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := x.h.Cookie(context.Background(), x.target); !errors.Is(err, ErrClosed) {
		t.Errorf("Cookie after Close: %v", err)
	}
	if _, err := x.h.Refresh(context.Background(), x.target, ""); !errors.Is(err, ErrClosed) {
		t.Errorf("Refresh after Close: %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := (Options{}).Validate(); err != nil {
		t.Fatalf("zero options: %v", err)
	}
	bad := Options{
		TokenSource:  "api",
		LogRoot:      "relative/path",
		PodsRoot:     "var/lib/kubelet/pods",
		TokenFile:    "../other-pod/token",
		TailLines:    -1,
		MaxFileBytes: -1,
		TokenPattern: "no group",
		TokenStream:  "stdin",
		CookiePrefix: "bad prefix",
		Timeout:      -time.Second,
		CacheSize:    -1,
	}
	err := bad.Validate()
	if err == nil {
		t.Fatal("bad options accepted")
	}
	for _, want := range []string{`token source "api"`, "log root", "pods root", "token file", "tail lines", "max file bytes",
		"(?P<token>...) group", `token stream "stdin"`, "cookie prefix", "timeout", "cache size"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not report %q", err, want)
		}
	}
	if bad.TailLines != -1 || bad.LogRoot != "relative/path" {
		t.Error("Validate changed its receiver")
	}
	if _, err := New(bad); err == nil {
		t.Error("New accepted bad options")
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New(Options{LogRoot: "/nonexistent/sandgate/logs"}); err == nil {
		t.Error("missing log root accepted")
	}
	reg := prometheus.NewRegistry()
	h, err := New(Options{LogRoot: t.TempDir(), Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := New(Options{LogRoot: t.TempDir(), Registerer: reg}); err == nil {
		t.Error("second registration on one registry accepted")
	}
}

func TestHandshakesPerUserCapped(t *testing.T) {
	x := newHarness(t, func(o *Options) { o.MaxPerUser = 3 })
	// Host variants of one name share a cookie.
	for _, host := range []string{"gw.example.com", "GW.Example.Com", "gw.EXAMPLE.com"} {
		tg := x.target
		tg.Host = host
		x.mustCookie(tg)
	}
	x.wantExchanges(1)
	// Each other Host costs a handshake, up to the user's budget.
	for i, host := range []string{"gw.example.com:1", "gw.example.com:2", "gw.example.com:3"} {
		tg := x.target
		tg.Host = host
		_, err := x.h.Cookie(context.Background(), tg)
		if wantThrottled := i == 2; errors.Is(err, ErrThrottled) != wantThrottled {
			t.Fatalf("handshake %d for Host %s: %v, throttled want %v", i+2, host, err, wantThrottled)
		}
	}
	x.wantExchanges(3)
	other := x.target
	other.User, other.Host = "alice", "gw.example.com:3"
	x.mustCookie(other)
	x.advance(budgetWindow)
	tg := x.target
	tg.Host = "gw.example.com:3"
	x.mustCookie(tg)
	x.wantExchanges(5)
	if v := counter(x.h.metrics.handshakes.WithLabelValues(resultThrottled, SourceLog)); v != 1 {
		t.Errorf("throttled handshakes = %v, want 1", v)
	}
}
