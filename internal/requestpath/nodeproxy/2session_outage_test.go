package nodeproxy

import (
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// outageHarness is a harness whose node proxies reach the auth API stand-in
// only through svc, which the test stops and starts.
func outageHarness(t *testing.T, ho harnessOpts) (*harness, *authService) {
	t.Helper()
	svc := newAuthService(t)
	inner := ho.modify
	ho.modify = func(o *Options) {
		if inner != nil {
			inner(o)
		}
		o.AuthAPI = svc.url()
	}
	h := newHarness(t, ho)
	svc.target = h.auth.addr
	return h, svc
}

// browser is one browser's cookie jar on node-a.
type browser struct {
	h      *harness
	jar    *cookiejar.Jar
	client *http.Client
	base   *url.URL
}

func newBrowser(h *harness, session string) *browser {
	jar, _ := cookiejar.New(nil)                                // nil options never fail
	base := &url.URL{Scheme: "http", Host: testHost, Path: "/"} // the jar goes by the Host header
	jar.SetCookies(base, []*http.Cookie{{Name: DefaultCookieName, Value: session, Path: "/"}})
	return &browser{h: h, jar: jar, base: base, client: &http.Client{
		Jar:           jar,
		Transport:     h.client.Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// get sends a GET with Host testHost and the jar's cookies; the jar keeps
// any Set-Cookie of the answer.
func (b *browser) get(path string) (*http.Response, string) {
	b.h.t.Helper()
	req, err := http.NewRequest(http.MethodGet, b.h.url("node-a", path), nil)
	if err != nil {
		b.h.t.Fatal(err)
	}
	req.Host = testHost
	resp, err := b.client.Do(req)
	if err != nil {
		b.h.t.Fatal(err)
	}
	return resp, readAll(b.h.t, resp)
}

// session is the session token the jar holds.
func (b *browser) session() string {
	for _, c := range b.jar.Cookies(b.base) {
		if c.Name == DefaultCookieName {
			return c.Value
		}
	}
	return ""
}

// refusedForOutage checks a 503 of an auth API outage: Retry-After, the
// reason in the body, and no Set-Cookie.
func refusedForOutage(t *testing.T, what string, resp *http.Response, body string) {
	t.Helper()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "2" ||
		!strings.Contains(body, "the sign-in service is unreachable, try again in 2 s") {
		t.Errorf("%s: %d Retry-After %q %q, want 503, 2 and the reason", what, resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if sc := resp.Header.Values("Set-Cookie"); len(sc) != 0 {
		t.Errorf("%s: Set-Cookie %q during an outage", what, sc)
	}
}

// TestAuthAPIOutageSignsNobodyOut: every auth API replica is down for 60 s
// (of the harness clock, across many requests), then back. A browser whose
// session is valid is served throughout; one whose token expired, and one
// with a key nobody knows, get 503 with Retry-After (WebSocket close 1013)
// and keep their cookie, never 401 nor 429. Once the auth API is back the
// same cookie jar is renewed and served: nobody had to sign in again.
func TestAuthAPIOutageSignsNobodyOut(t *testing.T) {
	h, svc := outageHarness(t, harnessOpts{})
	h.addUser("alice", "node-a")
	h.addUser("bob", "node-a")
	alice := newBrowser(h, h.session("alice"))
	if resp, body := alice.get("/u/alice/api/echo"); resp.StatusCode != http.StatusOK {
		t.Fatalf("alice before the outage: %d %s", resp.StatusCode, body)
	}
	h.clock.Advance(testLifetime / 2)
	bob := newBrowser(h, h.session("bob"))
	if resp, body := bob.get("/u/bob/api/echo"); resp.StatusCode != http.StatusOK {
		t.Fatalf("bob before the outage: %d %s", resp.StatusCode, body)
	}
	unknownKid := newBrowser(h, h.sessionSignedBy(h.foreignSigner(), "alice"))

	// The outage starts 30 s before alice's token expires; bob's has more
	// than half its life spent, so each of his requests would renew it.
	h.clock.Advance(testLifetime/2 - 30*time.Second)
	svc.stop()
	px := h.nodes["node-a"].proxy
	aliceToken := alice.session()
	for step := range 6 {
		resp, body := bob.get("/u/bob/api/echo")
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Set-Cookie") != "" {
			t.Fatalf("step %d: valid session during the outage: %d %q Set-Cookie %q", step, resp.StatusCode, body, resp.Header.Get("Set-Cookie"))
		}
		c, wsResp, err := h.dialWS("node-a", "/u/bob/api/ws", http.Header{"Cookie": {cookie(bob.session())}})
		if err != nil {
			t.Fatalf("step %d: WebSocket of a valid session during the outage: %v", step, err)
		}
		echoes(t, c, fmt.Sprintf("still here at step %d", step))
		c.Close()
		wsResp.Body.Close()
		h.clock.Advance(10 * time.Second)
	}
	// 60 s into the outage alice comes back with an expired token, and
	// tries again after every Retry-After, more often than the refusal
	// budget of unknown keys would allow.
	for try := range refusalBurst + 2 {
		resp, body := alice.get("/u/alice/api/echo")
		refusedForOutage(t, "expired session", resp, body)
		resp, body = unknownKid.get("/u/alice/api/echo")
		refusedForOutage(t, "session of an unknown key", resp, body)
		if try%3 == 0 {
			h.clock.Advance(2 * time.Second)
		}
	}
	if alice.session() != aliceToken {
		t.Error("the outage changed alice's cookie")
	}
	c, wsResp, err := h.dialWS("node-a", "/u/alice/api/ws", http.Header{"Cookie": {cookie(alice.session())}})
	if err != nil {
		t.Fatalf("WebSocket of an expired session during the outage: %v", err)
	}
	if code := closeCode(t, c); code != websocket.CloseTryAgainLater {
		t.Errorf("WebSocket of an expired session during the outage closed %d, want 1013", code)
	}
	wsResp.Body.Close()
	resp, body := alice.get("/login")
	refusedForOutage(t, "sign-in page", resp, body)
	if n := testutil.ToFloat64(px.m.authAPIUnreachable.WithLabelValues(callRenew)); n == 0 {
		t.Error("no unreachable renewal counted")
	}

	svc.start()
	h.clock.Advance(DefaultRetryAfter)
	for _, b := range []struct {
		name string
		b    *browser
	}{{"alice", alice}, {"bob", bob}} {
		resp, body := b.b.get("/u/" + b.name + "/api/echo")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s after the outage: %d %q", b.name, resp.StatusCode, body)
		}
		if !strings.HasPrefix(resp.Header.Get("Set-Cookie"), DefaultCookieName+"=") {
			t.Errorf("%s after the outage: not renewed (Set-Cookie %q)", b.name, resp.Header.Get("Set-Cookie"))
		}
		if resp, _ := b.b.get("/u/" + b.name + "/api/echo"); resp.StatusCode != http.StatusOK || resp.Header.Get("Set-Cookie") != "" {
			t.Errorf("%s with the renewed cookie: %d, Set-Cookie %q", b.name, resp.StatusCode, resp.Header.Get("Set-Cookie"))
		}
	}
	if alice.session() == aliceToken {
		t.Error("alice's jar still holds the expired token after the outage")
	}
	// The auth API decides about the unknown key again: it refuses it.
	if resp, body := unknownKid.get("/u/alice/api/echo"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unknown key after the outage: %d %q, want 401 from the auth API's refusal", resp.StatusCode, body)
	}
}

// TestWakeDuringAuthAPIOutage: a suspended sandbox cannot be woken while
// the auth API is down: the request is answered 503 with Retry-After at
// once (no WAKE_TIMEOUT hold), and served once the auth API is back.
func TestWakeDuringAuthAPIOutage(t *testing.T) {
	h, svc := outageHarness(t, wakeOpts(time.Minute, nil))
	h.addUser("alice", "node-a")
	h.suspendUntilWoken("alice", 0)
	hdr := map[string]string{"Authorization": "Bearer tok-alice"}

	svc.stop()
	resp := h.get("node-a", "/u/alice/api/echo", hdr)
	refusedForOutage(t, "wake", resp, readAll(t, resp))
	if n := h.auth.wakes.Load(); n != 0 {
		t.Fatalf("%d wakes reached the auth API through a stopped service", n)
	}

	svc.start()
	echo(t, h.get("node-a", "/u/alice/api/echo", hdr))
	if n := h.auth.wakes.Load(); n != 1 {
		t.Errorf("%d wake calls after the outage, want 1", n)
	}
}

// TestRenewalAnswerRules: what an expired session's request gets for each
// answer of the auth API to its renewal. Any 5xx means no replica could
// answer: 503, the cookie kept. A refusal signs the browser out.
func TestRenewalAnswerRules(t *testing.T) {
	for _, tc := range []struct {
		answer, want int
	}{
		{http.StatusInternalServerError, http.StatusServiceUnavailable},
		{http.StatusBadGateway, http.StatusServiceUnavailable},
		{http.StatusServiceUnavailable, http.StatusServiceUnavailable},
		{http.StatusGatewayTimeout, http.StatusServiceUnavailable},
		{http.StatusUnauthorized, http.StatusUnauthorized},
		{http.StatusForbidden, http.StatusUnauthorized},
		{http.StatusGone, http.StatusUnauthorized},
	} {
		t.Run(http.StatusText(tc.answer), func(t *testing.T) {
			internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "stand-in answer", tc.answer)
			}))
			defer internal.Close()
			h := newHarness(t, harnessOpts{modify: func(o *Options) { o.AuthAPIInternal = internal.URL }})
			h.addUser("alice", "node-a")
			session := cookie(h.session("alice"))
			h.clock.Advance(2 * testLifetime)
			resp := h.get("node-a", "/u/alice/api/echo", map[string]string{"Cookie": session})
			body := readAll(t, resp)
			if tc.want == http.StatusServiceUnavailable {
				refusedForOutage(t, "expired session", resp, body)
				return
			}
			if resp.StatusCode != tc.want || resp.Header.Get("Retry-After") != "" {
				t.Errorf("expired session: %d Retry-After %q %q, want %d", resp.StatusCode, resp.Header.Get("Retry-After"), body, tc.want)
			}
		})
	}
}
