package authapi

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestLoginVariants(t *testing.T) {
	e, in := warmStart(t)
	token, _ := in.signupJSON(t, "alice")
	pv := e.proxyView(t, in)

	cases := []struct {
		name string
		rq   req
		code int
	}{
		{"bearer only", req{header: map[string]string{"Authorization": "Bearer " + token}}, 200},
		{"bearer and user", req{json: `{"user":"alice"}`, header: map[string]string{"Authorization": "Bearer " + token}}, 200},
		{"json", req{json: `{"user":"alice","token":"` + token + `"}`}, 200},
		{"json token only", req{json: `{"token":"` + token + `"}`}, 200},
		{"form", req{form: url.Values{"user": {"alice"}, "token": {token}}, header: in.origin()}, 303},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.rq.method, tc.rq.path = "POST", "/login"
			resp, body := in.do(t, tc.rq)
			if resp.StatusCode != tc.code {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if tc.code == 303 && resp.Header.Get("Location") != "/u/alice/" {
				t.Errorf("Location %q", resp.Header.Get("Location"))
			}
			if tc.code == 200 {
				var out accountResponse
				mustJSON(t, body, &out)
				if out.User != "alice" || out.URL != "/u/alice/" || out.State != StateReady {
					t.Errorf("answer %+v", out)
				}
			}
			ck := cookie(resp, DefaultCookieName)
			if ck == nil {
				t.Fatal("no session cookie")
			}
			if err := pv.accepts(ck.Value); err != nil {
				t.Errorf("login cookie refused by the node proxy view: %v", err)
			}
		})
	}
}

// TestLoginDoesNotEnumerate: an unknown user, a known user with a wrong
// token and a token alone that opens nothing get byte-identical answers,
// and each does exactly one constant-time comparison.
func TestLoginDoesNotEnumerate(t *testing.T) {
	_, in := warmStart(t)
	in.signupJSON(t, "alice")
	var compares atomic.Int64
	in.srv.onCompare = func() { compares.Add(1) }
	wrong := newBearerToken()

	variants := map[string][]req{
		"json": {
			{json: `{"user":"nobody","token":"` + wrong + `"}`},
			{json: `{"user":"alice","token":"` + wrong + `"}`},
			{json: `{"token":"` + wrong + `"}`},
			{json: `{"user":"Not-Valid!","token":"` + wrong + `"}`},
			{header: map[string]string{"Authorization": "Bearer " + wrong}},
			{json: `{"user":"alice"}`},
		},
		"form": {
			{form: url.Values{"user": {"nobody"}, "token": {wrong}}},
			{form: url.Values{"user": {"alice"}, "token": {wrong}}},
		},
	}
	for name, reqs := range variants {
		t.Run(name, func(t *testing.T) {
			var first string
			for i, rq := range reqs {
				rq.method, rq.path = "POST", "/login"
				before := compares.Load()
				resp, body := in.do(t, rq)
				if n := compares.Load() - before; n != 1 {
					t.Errorf("request %d made %d token comparisons, want 1", i, n)
				}
				if resp.StatusCode != http.StatusUnauthorized || cookie(resp, DefaultCookieName) != nil {
					t.Errorf("request %d: %d, cookie %v", i, resp.StatusCode, cookie(resp, DefaultCookieName))
				}
				// A refused form comes back with the name typed in it,
				// whatever account it names.
				if rq.form != nil {
					body = strings.ReplaceAll(body, `value="`+rq.form.Get("user")+`"`, `value="typed"`)
				}
				got := answer(resp, body)
				if i == 0 {
					first = got
				} else if got != first {
					t.Errorf("request %d answered differently:\n%s\nvs\n%s", i, got, first)
				}
			}
		})
	}
}

// answer renders the parts of a response a client can compare: status,
// header names and values (but Date), body.
func answer(resp *http.Response, body string) string {
	var keys []string
	for k := range resp.Header {
		if k != "Date" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(resp.Status + "\n")
	for _, k := range keys {
		b.WriteString(k + ": " + strings.Join(resp.Header[k], ",") + "\n")
	}
	return b.String() + body
}

func TestLoginRefusesCrossOriginForms(t *testing.T) {
	_, in := warmStart(t)
	token, _ := in.signupJSON(t, "alice")
	resp, _ := in.do(t, req{method: "POST", path: "/login", form: url.Values{"user": {"alice"}, "token": {token}},
		header: map[string]string{"Origin": "https://evil.example"}})
	if resp.StatusCode != http.StatusForbidden || cookie(resp, DefaultCookieName) != nil {
		t.Errorf("cross-origin login: %d", resp.StatusCode)
	}
}

func TestSSOHeaderIsTrustedOnlyWhenConfigured(t *testing.T) {
	e := newEnv(t)
	e.warm(t)
	plain := e.start(t, nil)
	plain.signupJSON(t, "alice")
	sso := map[string]string{"X-Forwarded-User": "alice"}
	if resp, _ := plain.do(t, req{method: "POST", path: "/login", header: sso}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unconfigured SSO header logged in: %d", resp.StatusCode)
	}
	in := e.start(t, func(o *Options) { o.AuthProxyHeader = "X-Forwarded-User"; o.WakeTimeout = time.Second })
	resp, body := in.do(t, req{method: "POST", path: "/login", header: sso})
	if resp.StatusCode != http.StatusOK || cookie(resp, DefaultCookieName) == nil {
		t.Errorf("SSO login: %d %s", resp.StatusCode, body)
	}
	// Signup under SSO takes the proxy's user and refuses another name.
	if resp, body := in.do(t, req{method: "POST", path: "/users", json: `{"user":"mallory"}`, header: map[string]string{"X-Forwarded-User": "bob"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("SSO signup for another name: %d %s", resp.StatusCode, body)
	}
	if resp, body := in.do(t, req{method: "POST", path: "/users", json: `{}`, header: map[string]string{"X-Forwarded-User": "Bob"}}); resp.StatusCode != http.StatusCreated || !strings.Contains(body, `"user":"bob"`) {
		t.Errorf("SSO signup: %d %s", resp.StatusCode, body)
	}
}
