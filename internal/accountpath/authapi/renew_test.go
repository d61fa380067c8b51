package authapi

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sandgate/sandgate/internal/testing/testkit"
)

const renewPath = "/internal/v1/sessions/renew"

// saToken returns a token of ServiceAccount ns/name bound to audiences.
func saToken(t *testing.T, ns, name string, audiences ...string) string {
	t.Helper()
	tok, err := testkit.ControlPlane(t).ServiceAccountToken(t.Context(), ns, name, 3600, audiences...)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// clockedStart is warmStart on an offset clock the test moves; edit, when
// not nil, changes the options further, as in start.
func clockedStart(t *testing.T, edit func(*Options)) (*env, *instance, *testkit.Clock) {
	t.Helper()
	e := newEnv(t)
	e.warm(t)
	clock := testkit.NewOffsetClock()
	in := e.start(t, func(o *Options) {
		o.Now = clock.Now
		if edit != nil {
			edit(o)
		}
	})
	return e, in, clock
}

func TestInternalRoutesAdmitOnlyAllowedServiceAccounts(t *testing.T) {
	e := newEnv(t)
	e.warm(t)
	m := NewMetrics(nil)
	in := e.start(t, func(o *Options) { o.Metrics = m })
	_, ck := in.signupJSON(t, "alice")
	body := `{"token":"` + ck.Value + `"}`

	proxy := saToken(t, e.ns, "nodeproxy", DefaultInternalAudience)
	cases := []struct {
		name, auth string
		code       int
	}{
		{"anonymous", "", 401},
		{"garbage", "Bearer not-a-token", 401},
		{"wrong audience", "Bearer " + saToken(t, e.ns, "nodeproxy"), 401},
		{"other service account", "Bearer " + saToken(t, e.ns, "intruder", DefaultInternalAudience), 403},
		{"node proxy", "Bearer " + proxy, 200},
	}
	for _, tc := range cases {
		h := map[string]string{}
		if tc.auth != "" {
			h["Authorization"] = tc.auth
		}
		resp, got := in.do(t, req{method: "POST", path: renewPath, json: body, header: h})
		if resp.StatusCode != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, got, tc.code)
		}
	}
	// The review of the proxy's token is cached.
	before := testutil.ToFloat64(m.TokenReviews.WithLabelValues("allowed", "true"))
	if resp, _ := in.do(t, req{method: "POST", path: renewPath, json: body, header: map[string]string{"Authorization": "Bearer " + proxy}}); resp.StatusCode != 200 {
		t.Fatalf("second renewal: %d", resp.StatusCode)
	}
	if testutil.ToFloat64(m.TokenReviews.WithLabelValues("allowed", "true")) != before+1 {
		t.Error("the second call was not answered from the TokenReview cache")
	}
	// Later work adds its internal routes behind the same guard.
	in.srv.HandleInternal("POST /internal/v1/test", "test", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(Caller(r)))
	}))
	if resp, got := in.do(t, req{method: "POST", path: "/internal/v1/test", header: map[string]string{"Authorization": "Bearer " + proxy}}); resp.StatusCode != 200 || got != "system:serviceaccount:"+e.ns+":nodeproxy" {
		t.Errorf("added internal route: %d %q", resp.StatusCode, got)
	}
	if resp, _ := in.do(t, req{method: "POST", path: "/internal/v1/test"}); resp.StatusCode != 401 {
		t.Errorf("added internal route without a token: %d", resp.StatusCode)
	}
}

func TestRenewal(t *testing.T) {
	e, in, clock := clockedStart(t, nil)
	token, ck := in.signupJSON(t, "alice")
	proxy := map[string]string{"Authorization": "Bearer " + saToken(t, e.ns, "nodeproxy", DefaultInternalAudience)}
	renew := func(tok string) (int, renewResponse, string) {
		t.Helper()
		resp, body := in.do(t, req{method: "POST", path: renewPath, json: `{"token":"` + tok + `"}`, header: proxy})
		var out renewResponse
		if resp.StatusCode == 200 {
			mustJSON(t, body, &out)
		}
		return resp.StatusCode, out, body
	}
	old, err := in.srv.verifier.Verify(ck.Value)
	if err != nil {
		t.Fatal(err)
	}

	// An hour later the token has long expired; the session has not.
	clock.Advance(time.Hour)
	if _, err := in.srv.verifier.Verify(ck.Value); err == nil {
		t.Fatal("token still valid after an hour")
	}
	code, out, body := renew(ck.Value)
	if code != 200 {
		t.Fatalf("renew expired token: %d %s", code, body)
	}
	fresh, err := in.srv.verifier.Verify(out.Token)
	if err != nil {
		t.Fatalf("renewed token: %v", err)
	}
	if fresh.SessionID != old.SessionID || !fresh.AuthTime.Equal(old.AuthTime) || fresh.Epoch != old.Epoch || fresh.User != "alice" ||
		!fresh.Expiry.After(old.Expiry) || out.ExpiresAt != fresh.Expiry.Unix() {
		t.Errorf("renewed claims %+v from %+v (answer %+v)", fresh, old, out)
	}
	wantAge := int((DefaultCookieMaxAge - time.Hour) / time.Second)
	if out.MaxAge < wantAge-5 || out.MaxAge > wantAge {
		t.Errorf("max_age %d, want about %d", out.MaxAge, wantAge)
	}
	for _, attr := range []string{DefaultCookieName + "=" + out.Token, "Path=/", "HttpOnly", "SameSite=Lax", "Max-Age="} {
		if !strings.Contains(out.SetCookie, attr) {
			t.Errorf("set_cookie %q lacks %q", out.SetCookie, attr)
		}
	}

	// Refusals: garbage, a forged signature, a body without token.
	if code, _, _ := renew("abc"); code != 400 {
		t.Errorf("renew garbage: %d", code)
	}
	forged := forgeSignature(t, out.Token)
	if code, _, _ := renew(forged); code != 400 {
		t.Errorf("renew forged: %d", code)
	}
	if resp, _ := in.do(t, req{method: "POST", path: renewPath, json: `{}`, header: proxy}); resp.StatusCode != 400 {
		t.Errorf("renew without token: %d", resp.StatusCode)
	}

	// Logout ends renewal.
	second := in.login(t, token)
	if resp, _ := in.do(t, req{method: "POST", path: "/logout", cookies: []*http.Cookie{second}, header: in.origin()}); resp.StatusCode != 204 {
		t.Fatal("logout failed")
	}
	if code, _, _ := renew(second.Value); code != http.StatusGone {
		t.Errorf("renew after logout: %d, want 410", code)
	}

	// Past COOKIE_MAX_AGE nothing renews.
	clock.Advance(DefaultCookieMaxAge)
	if code, _, body := renew(out.Token); code != http.StatusGone {
		t.Errorf("renew past the maximum age: %d %s, want 410", code, body)
	}
}

// forgeSignature flips a bit in tok's signature.
func forgeSignature(t *testing.T, tok string) string {
	t.Helper()
	i := strings.LastIndexByte(tok, '.')
	sig := []byte(tok[i+1:])
	if sig[0] == 'A' {
		sig[0] = 'B'
	} else {
		sig[0] = 'A'
	}
	return tok[:i+1] + string(sig)
}
