package authapi

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

func TestClientAddr(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	cases := []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"untrusted peer ignores XFF", "192.0.2.7:5000", []string{"203.0.113.9"}, "192.0.2.7"},
		{"trusted peer, rightmost entry", "10.1.2.3:5000", []string{"198.51.100.1, 203.0.113.9"}, "203.0.113.9"},
		{"spoofed left entries ignored", "10.1.2.3:5000", []string{"1.1.1.1", "8.8.8.8, 203.0.113.9"}, "203.0.113.9"},
		{"trusted peer without XFF", "10.1.2.3:5000", nil, "10.1.2.3"},
		{"garbage XFF falls back to the peer", "10.1.2.3:5000", []string{"not-an-ip"}, "10.1.2.3"},
		{"ipv6 trusted peer", "[::1]:5000", []string{"2001:db8::5"}, "2001:db8::5"},
		{"v4-mapped XFF", "10.1.2.3:5000", []string{"::ffff:203.0.113.9"}, "203.0.113.9"},
		// Behind an ingress: the node proxy appends the ingress address,
		// which is trusted too, so the client is the entry left of it.
		{"ingress behind the node proxy", "10.1.2.3:5000", []string{"198.51.100.7, 10.50.0.1"}, "198.51.100.7"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/login", nil)
			r.RemoteAddr = tc.peer
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := clientAddr(r, trusted).String(); got != tc.want {
				t.Errorf("clientAddr = %s, want %s", got, tc.want)
			}
		})
	}
}

// limiterStep is one request in a limiter rule: advance the clock, then a
// request from client, which must be allowed or not.
type limiterStep struct {
	advance time.Duration
	client  string
	allowed bool
}

func TestLimiterRules(t *testing.T) {
	const a, b, c, d = "192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"
	cases := []struct {
		name    string
		limit   int
		maxKeys int
		steps   []limiterStep
	}{
		{"limit per client in a window", 2, 10, []limiterStep{
			{0, a, true}, {0, a, true}, {0, a, false}, {0, b, true}, {time.Second, a, false},
		}},
		{"the next window starts over", 1, 10, []limiterStep{
			{0, a, true}, {0, a, false}, {time.Minute, a, true}, {0, a, false},
		}},
		{"one IPv6 /64 is one client", 1, 10, []limiterStep{
			{0, "2001:db8:0:1::1", true}, {0, "2001:db8:0:1:ffff::2", false}, {0, "2001:db8:0:2::1", true},
		}},
		{"a v4-mapped address is its IPv4 address", 1, 10, []limiterStep{
			{0, a, true}, {0, "::ffff:" + a, false},
		}},
		{"a full table forgets the oldest window only", 1, 3, []limiterStep{
			{0, a, true}, {time.Second, b, true}, {time.Second, c, true},
			{0, a, false}, {0, b, false}, {0, c, false},
			{time.Second, d, true}, // a is forgotten
			{0, b, false}, {0, c, false}, {0, a, true},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := testkit.NewClock(testkit.Epoch)
			l := newLimiter(tc.limit, time.Minute, clock.Now)
			l.maxKeys = tc.maxKeys
			for i, st := range tc.steps {
				clock.Advance(st.advance)
				if ok, _ := l.allow(netip.MustParseAddr(st.client)); ok != st.allowed {
					t.Fatalf("step %d (%s): allowed %v, want %v", i, st.client, ok, st.allowed)
				}
				if n := l.size(); n > tc.maxKeys {
					t.Fatalf("step %d: %d clients remembered, bound %d", i, n, tc.maxKeys)
				}
			}
		})
	}
}

func TestLimiterForgetsEndedWindows(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	l := newLimiter(1, time.Minute, clock.Now)
	for _, c := range []string{"192.0.2.1", "192.0.2.2", "2001:db8::1"} {
		l.allow(netip.MustParseAddr(c))
	}
	clock.Advance(time.Minute)
	l.allow(netip.MustParseAddr("192.0.2.9"))
	if n := l.size(); n != 1 {
		t.Errorf("%d clients remembered after their windows ended, want 1", n)
	}
}

func TestLimiterRetryAfter(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	l := newLimiter(1, time.Minute, clock.Now)
	a := netip.MustParseAddr("192.0.2.1")
	l.allow(a)
	clock.Advance(20 * time.Second)
	if ok, wait := l.allow(a); ok || wait != 40*time.Second {
		t.Errorf("allowed %v, retry after %v; want refused for 40s", ok, wait)
	}
}

func TestBudget(t *testing.T) {
	clock := testkit.NewClock(testkit.Epoch)
	var b budget
	for i, want := range []bool{true, true, false} {
		if ok, _ := b.take(clock.Now(), 2, time.Minute); ok != want {
			t.Errorf("take %d: %v, want %v", i, ok, want)
		}
	}
	clock.Advance(15 * time.Second)
	if ok, wait := b.take(clock.Now(), 2, time.Minute); ok || wait != 45*time.Second {
		t.Errorf("over budget: %v, retry after %v", ok, wait)
	}
	clock.Advance(45 * time.Second)
	if ok, _ := b.take(clock.Now(), 2, time.Minute); !ok {
		t.Error("refused in the next window")
	}
}

// TestSignupBudgetAcrossClients: clients each within their own limit
// still share SignupBudget; login does not spend it.
func TestSignupBudgetAcrossClients(t *testing.T) {
	e := newEnv(t)
	in := e.start(t, func(o *Options) {
		o.RateLimit = 5
		o.SignupBudget = 3
	})
	post := func(path string, client int) int {
		r := httptest.NewRequest("POST", path, strings.NewReader(`{}`))
		r.Header.Set("Content-Type", "application/json")
		r.RemoteAddr = fmt.Sprintf("198.51.100.%d:1234", client)
		w := httptest.NewRecorder()
		in.srv.Handler().ServeHTTP(w, r)
		return w.Code
	}
	for client := range 3 {
		if code := post("/users", client); code == http.StatusTooManyRequests {
			t.Fatalf("signup %d within the budget: 429", client)
		}
	}
	if code := post("/users", 10); code != http.StatusTooManyRequests {
		t.Errorf("signup past the budget from a fresh client: %d, want 429", code)
	}
	if code := post("/login", 11); code == http.StatusTooManyRequests {
		t.Error("login refused by the signup budget")
	}
}

// countingBody records whether anything read it.
type countingBody struct{ reads atomic.Int64 }

func (b *countingBody) Read(p []byte) (int, error) {
	b.reads.Add(1)
	return 0, io.EOF
}
func (b *countingBody) Close() error { return nil }

func TestRateLimitAnswers429BeforeReadingTheBody(t *testing.T) {
	e := newEnv(t)
	in := e.start(t, func(o *Options) {
		o.RateLimit = 2
		o.RateWindow = time.Minute
		o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		o.WakeTimeout = 50 * time.Millisecond
	})
	// In process: the third request's body is never touched.
	for i, path := range []string{"/login", "/users", "/login"} {
		body := &countingBody{}
		r := httptest.NewRequest("POST", path, nil)
		r.Body = body
		r.ContentLength = 100
		r.Header.Set("Content-Type", "application/json")
		r.RemoteAddr = "192.0.2.50:1234"
		w := httptest.NewRecorder()
		in.srv.Handler().ServeHTTP(w, r)
		if i < 2 {
			if w.Code == http.StatusTooManyRequests {
				t.Fatalf("request %d limited", i)
			}
			continue
		}
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
			t.Fatalf("third request: %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
		}
		if n := body.reads.Load(); n != 0 {
			t.Errorf("the limited request's body was read %d times", n)
		}
	}

	// Over the network, through a trusted proxy: two clients behind the same
	// proxy have their own windows, and a limited client gets its answer
	// while it is still holding back the 2 MB body it declared (a client
	// that is not limited gets 413 for that body, also without sending it).
	send := func(xff string) string {
		conn, err := net.Dial("tcp", in.http.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.WriteString(conn, "POST /users HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
			"X-Forwarded-For: "+xff+"\r\nContent-Length: 2000000\r\n\r\n")
		status, _ := bufio.NewReader(conn).ReadString('\n')
		return strings.TrimSpace(status)
	}
	for range 2 {
		in.do(t, req{method: "POST", path: "/login", json: `{}`, header: map[string]string{"X-Forwarded-For": "198.51.100.1"}})
	}
	if got := send("1.2.3.4, 198.51.100.1"); !strings.Contains(got, "429") {
		t.Errorf("limited client over the network: %q, want 429 before the body", got)
	}
	if got := send("198.51.100.2"); !strings.Contains(got, "413") {
		t.Errorf("another client behind the same proxy: %q, want 413", got)
	}
}
