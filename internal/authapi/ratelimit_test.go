package authapi

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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

func TestLimiterWindow(t *testing.T) {
	clock := &fakeClock{}
	l := newLimiter(2, time.Minute, clock.Now)
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for i, want := range []bool{true, true, false, false} {
		if ok, _ := l.allow(a); ok != want {
			t.Errorf("request %d: allowed %v, want %v", i, ok, want)
		}
	}
	if ok, _ := l.allow(b); !ok {
		t.Error("another client is limited")
	}
	_, wait := l.allow(a)
	if wait <= 0 || wait > time.Minute {
		t.Errorf("retry after %v", wait)
	}
	clock.Advance(time.Minute)
	if ok, _ := l.allow(a); !ok {
		t.Error("still limited in the next window")
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
