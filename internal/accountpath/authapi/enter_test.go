package authapi

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/userorigin"
)

const redeemPath = "/internal/v1/origin/redeem"

func subdomain(o *Options) {
	o.RoutingMode, o.UserDomain = userorigin.Subdomain, "u.example.test"
}

// testState is the entry state of the browser the tests play.
var testState = strings.Repeat("s", 43)

// withState appends the binding of state to path, as a node proxy does.
func withState(path, state string) string {
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	return path + sep + account.EntryStateParam + "=" + account.EntryStateBinding(state)
}

// entry opens /u/<user><path> on in with ck, bound to testState, and
// returns the entry URL.
func entry(t *testing.T, in *instance, ck *http.Cookie, user, path string) *url.URL {
	t.Helper()
	resp, body := in.do(t, req{method: "GET", path: withState("/u/"+user+path, testState), cookies: []*http.Cookie{ck}, header: map[string]string{"Accept": "text/html"}})
	u, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || err != nil || u.Path != userorigin.EnterPath {
		t.Fatalf("/u/%s%s: %d %q %s", user, path, resp.StatusCode, resp.Header.Get("Location"), body)
	}
	return u
}

// redeemBody is a redemption of code with testState.
func redeemBody(code, origin string) string { return redeemWith(code, testState, origin) }

func redeemWith(code, state, origin string) string {
	b, _ := json.Marshal(redeemRequest{Code: code + account.EntryStateSep + state, Origin: origin})
	return string(b)
}

func TestEntryCodeRedeemedOnceAcrossReplicas(t *testing.T) {
	e := newEnv(t)
	e.warm(t)
	a, b := e.start(t, subdomain), e.start(t, subdomain)
	_, ck := a.signupJSON(t, "alice")
	u := entry(t, a, ck, "alice", "/notes?x=1")
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(a.http.URL, "http://"))
	origin := "http://alice.u.example.test:" + port
	if got := u.Scheme + "://" + u.Host; got != origin {
		t.Fatalf("entry origin %q, want %q", got, origin)
	}
	if next := u.Query().Get("next"); next != "/notes?x=1" {
		t.Errorf("next %q", next)
	}
	proxy := map[string]string{"Authorization": "Bearer " + saToken(t, e.ns, "nodeproxy", DefaultInternalAudience)}
	body := redeemBody(u.Query().Get("code"), origin)

	var (
		mu    sync.Mutex
		codes = map[int]int{}
		won   string
		wg    sync.WaitGroup
	)
	for i := range 10 {
		in := []*instance{a, b}[i%2]
		wg.Go(func() {
			resp, got := in.do(t, req{method: "POST", path: redeemPath, json: body, header: proxy})
			mu.Lock()
			defer mu.Unlock()
			codes[resp.StatusCode]++
			if resp.StatusCode == http.StatusOK {
				won = got
			}
		})
	}
	wg.Wait()
	if codes[http.StatusOK] != 1 || codes[http.StatusForbidden] != 9 {
		t.Fatalf("10 concurrent redemptions on two replicas: %v, want one 200 and nine 403", codes)
	}
	var out renewResponse
	mustJSON(t, won, &out)
	if !strings.HasPrefix(out.SetCookie, DefaultOriginCookieName+"=") || strings.Contains(strings.ToLower(out.SetCookie), "domain=") {
		t.Errorf("origin cookie %q: want host-only %s", out.SetCookie, DefaultOriginCookieName)
	}
	c, err := a.srv.originVerifier.Verify(out.Token)
	if err != nil || c.User != "alice" || c.Origin != origin {
		t.Fatalf("origin session %+v: %v", c, err)
	}
	if _, err := a.srv.verifier.Verify(out.Token); err == nil {
		t.Error("an origin session verifies as a main session")
	}

	resp, got := b.do(t, req{method: "POST", path: renewPath, json: `{"token":"` + out.Token + `"}`, header: proxy})
	var renewed renewResponse
	mustJSON(t, got, &renewed)
	if rc, err := a.srv.originVerifier.Verify(renewed.Token); resp.StatusCode != http.StatusOK || err != nil || rc.Origin != origin ||
		!strings.HasPrefix(renewed.SetCookie, DefaultOriginCookieName+"=") {
		t.Errorf("renewal of an origin session: %d %v %q", resp.StatusCode, err, renewed.SetCookie)
	}
}

func TestEntryRules(t *testing.T) {
	e, in, clock := clockedStart(t, func(o *Options) { subdomain(o); o.EntryCodeTTL = time.Second })
	_, ck := in.signupJSON(t, "alice")
	proxy := map[string]string{"Authorization": "Bearer " + saToken(t, e.ns, "nodeproxy", DefaultInternalAudience)}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(in.http.URL, "http://"))
	origin := "http://alice.u.example.test:" + port

	resp, _ := in.do(t, req{method: "GET", path: "/"})
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' http://*.u.example.test:*;") {
		t.Errorf("landing CSP %q: signup, login and recreate end on the user origin, so form-action must admit it", csp)
	}
	for _, tt := range []struct {
		name   string
		header map[string]string
		cookie bool
		path   string
		code   int
		loc    string
	}{
		{"another user's path", map[string]string{"Accept": "text/html"}, true, "/u/bob/", http.StatusForbidden, ""},
		{"browser without a session", map[string]string{"Accept": "text/html"}, false, "/u/alice/", http.StatusSeeOther, "/"},
		{"API client without a session", map[string]string{"Accept": "application/json"}, false, "/u/alice/", http.StatusUnauthorized, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rq := req{method: "GET", path: tt.path, header: tt.header}
			if tt.cookie {
				rq.cookies = []*http.Cookie{ck}
			}
			resp, body := in.do(t, rq)
			if resp.StatusCode != tt.code || !strings.Contains(resp.Header.Get("Location")+"&", tt.loc) {
				t.Errorf("%d to %q (%s), want %d to %q", resp.StatusCode, resp.Header.Get("Location"), body, tt.code, tt.loc)
			}
		})
	}

	for _, tt := range []struct {
		name    string
		origin  string
		advance time.Duration
	}{
		{"other origin", "http://alice.u.example.test:1", 0},
		{"other user's origin", "http://bob.u.example.test:" + port, 0},
		{"expired", origin, time.Second + entryLeeway + 1500*time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := entry(t, in, ck, "alice", "/")
			clock.Advance(tt.advance)
			resp, body := in.do(t, req{method: "POST", path: redeemPath, json: redeemBody(u.Query().Get("code"), tt.origin), header: proxy})
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%d %s, want 403", resp.StatusCode, body)
			}
		})
	}
	t.Run("no state binding: sent to the user origin to get one", func(t *testing.T) {
		resp, body := in.do(t, req{method: "GET", path: "/u/alice/notes?x=1", cookies: []*http.Cookie{ck}, header: map[string]string{"Accept": "text/html"}})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != origin+"/notes?x=1" {
			t.Errorf("%d to %q (%s), want 303 to %s/notes?x=1", resp.StatusCode, resp.Header.Get("Location"), body, origin)
		}
	})
	for _, tt := range []struct{ name, state string }{
		{"redeemed by another browser (other state)", strings.Repeat("v", 43)},
		{"redeemed without a state", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := entry(t, in, ck, "alice", "/")
			resp, body := in.do(t, req{method: "POST", path: redeemPath, json: redeemWith(u.Query().Get("code"), tt.state, origin), header: proxy})
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%d %s, want 403", resp.StatusCode, body)
			}
			if resp, _ := in.do(t, req{method: "POST", path: redeemPath, json: redeemBody(u.Query().Get("code"), origin), header: proxy}); resp.StatusCode != http.StatusOK {
				t.Errorf("the code's own browser then: %d, want 200 (a refused presentation does not use the code)", resp.StatusCode)
			}
		})
	}
	t.Run("used, then again past its expiry but within the leeway", func(t *testing.T) {
		u := entry(t, in, ck, "alice", "/")
		body := redeemBody(u.Query().Get("code"), origin)
		if resp, got := in.do(t, req{method: "POST", path: redeemPath, json: body, header: proxy}); resp.StatusCode != http.StatusOK {
			t.Fatalf("first redemption: %d %s", resp.StatusCode, got)
		}
		clock.Advance(time.Second + entryLeeway/2)
		if resp, got := in.do(t, req{method: "POST", path: redeemPath, json: body, header: proxy}); resp.StatusCode != http.StatusForbidden {
			t.Errorf("second redemption after the code expired, within the leeway that still verifies it: %d %s, want 403", resp.StatusCode, got)
		}
	})
	t.Run("a main session is no entry code", func(t *testing.T) {
		resp, _ := in.do(t, req{method: "POST", path: redeemPath, json: redeemBody(ck.Value, origin), header: proxy})
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%d, want 403", resp.StatusCode)
		}
	})
	t.Run("logout ends entry", func(t *testing.T) {
		u := entry(t, in, ck, "alice", "/")
		if resp, _ := in.do(t, req{method: "POST", path: "/logout", cookies: []*http.Cookie{ck}, header: in.origin()}); resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("logout: %d", resp.StatusCode)
		}
		resp, body := in.do(t, req{method: "POST", path: redeemPath, json: redeemBody(u.Query().Get("code"), origin), header: proxy})
		if resp.StatusCode != http.StatusGone {
			t.Errorf("code of a logged-out session: %d %s, want 410", resp.StatusCode, body)
		}
	})
}

func TestCutStateBinding(t *testing.T) {
	b := account.EntryStateBinding(testState)
	for _, tt := range []struct{ query, rest, binding string }{
		{"", "", ""},
		{"sandgate_state=" + b, "", b},
		{"x=1&sandgate_state=" + b, "x=1", b},
		{"sandgate_state=" + b + "&x=1", "sandgate_state=" + b + "&x=1", ""},
		{"xsandgate_state=" + b, "xsandgate_state=" + b, ""},
		{"x=1&sandgate_state=short", "x=1&sandgate_state=short", ""},
		{"x=1&sandgate_state=" + strings.Repeat("!", 22), "x=1&sandgate_state=" + strings.Repeat("!", 22), ""},
	} {
		if rest, binding := cutStateBinding(tt.query); rest != tt.rest || binding != tt.binding {
			t.Errorf("cutStateBinding(%q) = %q, %q; want %q, %q", tt.query, rest, binding, tt.rest, tt.binding)
		}
	}
}

func FuzzCutStateBinding(f *testing.F) {
	for _, s := range []string{"", "a=1", "sandgate_state=" + account.EntryStateBinding("x"), "a&sandgate_state=&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		rest, binding := cutStateBinding(q)
		switch {
		case binding == "" && rest != q:
			t.Fatalf("cutStateBinding(%q) changed the query without a binding: %q", q, rest)
		case binding != "" && (len(binding) != bindingLen || !strings.HasSuffix(q, binding) || len(rest) >= len(q)):
			t.Fatalf("cutStateBinding(%q) = %q, %q", q, rest, binding)
		}
	})
}

func TestUsedCodes(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	got := usedCodes("a:1000010,b:999999,:1000010,c:x,d,"+strings.Repeat("e", 65)+":1000010,f:1000000", now)
	if len(got) != 2 || got["a"] != 1000010 || got["f"] != 1000000 {
		t.Errorf("usedCodes = %v, want a and f (unexpired, well formed)", got)
	}
	if back := usedCodes(encodeUsedCodes(got), now); len(back) != 2 {
		t.Errorf("round trip: %v", back)
	}
}

func FuzzUsedCodes(f *testing.F) {
	for _, s := range []string{"", "a:1", "a:1,b:2", "::,", "a:99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		now := time.Unix(1_000_000, 0)
		m := usedCodes(v, now)
		for id, exp := range m {
			if id == "" || len(id) > 64 || exp < now.Unix() || strings.ContainsAny(id, ":,") {
				t.Fatalf("usedCodes(%q) kept %q:%d", v, id, exp)
			}
		}
		if back := usedCodes(encodeUsedCodes(m), now); len(back) != len(m) {
			t.Fatalf("round trip of %v gave %v", m, back)
		}
	})
}
