package authapi

import (
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
)

// navigation is what a browser sends with a top-level form submission:
// the landing page's rotation and recreate forms.
var navigation = map[string]string{"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document"}

// withHeaders is a copy of h with each of more added.
func withHeaders(h map[string]string, more ...map[string]string) map[string]string {
	out := maps.Clone(h)
	if out == nil {
		out = map[string]string{}
	}
	for _, m := range more {
		maps.Copy(out, m)
	}
	return out
}

// TestNewTokenOnlyToANavigation is the rule of checkTokenRecipient for
// both endpoints whose answer carries a new bearer token: by bearer token
// always; by session cookie (with a same-origin Origin) only on a
// top-level navigation, which a script on the origin (an agent page in
// path routing) cannot make fetch claim. A refused request changes
// nothing.
func TestNewTokenOnlyToANavigation(t *testing.T) {
	e := newEnv(t)
	in, token, ck, _ := e.aliceTwice(t)

	fetchCORS := map[string]string{"Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}
	fetchSame := map[string]string{"Sec-Fetch-Mode": "same-origin", "Sec-Fetch-Dest": "empty"}
	frame := map[string]string{"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"}
	kinds := []struct {
		name     string
		fetch    map[string]string
		navigate bool // sent as a browser's form, answered with a page
	}{
		{"navigate document", navigation, true},
		{"fetch cors", fetchCORS, false},
		{"fetch same-origin", fetchSame, false},
		{"no fetch metadata", nil, false},
		{"navigate iframe", frame, true},
	}
	for _, endpoint := range []string{"/users/alice/token", "/recreate"} {
		for _, auth := range []string{"bearer", "cookie"} {
			for _, k := range kinds {
				t.Run(endpoint+" "+auth+" "+k.name, func(t *testing.T) {
					allowed := auth == "bearer" || k.name == "navigate document"
					rq := req{method: "POST", path: endpoint, header: withHeaders(in.origin(), k.fetch)}
					if k.navigate {
						rq.form = url.Values{}
						rq.header["Accept"] = "text/html"
					} else {
						rq.header["Accept"] = "application/json"
					}
					if auth == "bearer" {
						rq.header["Authorization"] = "Bearer " + token
					} else {
						rq.cookies = []*http.Cookie{ck}
					}
					before, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					resp, body := in.do(t, rq)
					post, shown := resp, ""
					if k.navigate && resp.StatusCode == http.StatusSeeOther {
						resp, body, shown = in.tokenView(t, resp)
					} else if !k.navigate && resp.StatusCode/100 == 2 {
						var out accountResponse
						mustJSON(t, body, &out)
						shown = out.Token
					}

					if !allowed {
						if resp.StatusCode != http.StatusForbidden || shown != "" || strings.Contains(body, `"token"`) {
							t.Fatalf("%d, token shown %v: %s; want 403 and no token", resp.StatusCode, shown != "", body)
						}
						if !k.navigate && !strings.Contains(body, `"error":"a new token is only shown on a page the browser opens: scripts must use the bearer token, browsers the form on the account page"`) {
							t.Errorf("refusal does not say what to do instead: %s", body)
						}
						if c := cookie(resp, DefaultCookieName); c != nil && c.MaxAge > 0 {
							if _, err := in.srv.verifier.Verify(c.Value); err == nil {
								if cl := mustClaims(t, in, c); cl.SessionID != mustClaims(t, in, ck).SessionID {
									t.Errorf("a refused request started a new session")
								}
							}
						}
						after, err := e.claims.Get(t.Context(), "dsh-alice", metav1.GetOptions{})
						if err != nil {
							t.Fatal(err)
						}
						if after.UID != before.UID || after.Annotations[account.AnnotationTokenHash] != before.Annotations[account.AnnotationTokenHash] ||
							after.Annotations[account.AnnotationSessionEpoch] != before.Annotations[account.AnnotationSessionEpoch] {
							t.Errorf("a refused request changed the account")
						}
						if _, err := in.srv.checkToken("alice", token); err != nil {
							t.Errorf("a refused request ended the token: %v", err)
						}
						return
					}

					if resp.StatusCode/100 != 2 || shown == "" || shown == token {
						t.Fatalf("%d, new token shown %v: %s", resp.StatusCode, shown != "" && shown != token, body)
					}
					if _, err := in.srv.checkToken("alice", shown); err != nil {
						t.Errorf("the token shown does not open the account: %v", err)
					}
					if k.navigate {
						if got := resp.Header.Get("Cross-Origin-Opener-Policy"); got != "same-origin" {
							t.Errorf("token page Cross-Origin-Opener-Policy %q, want same-origin", got)
						}
						checkPage(t, resp, body)
					} else if got := resp.Header.Get("Cache-Control"); got != "no-store" {
						t.Errorf("token answer Cache-Control %q, want no-store", got)
					}
					fresh := cookie(post, DefaultCookieName)
					if fresh == nil {
						t.Fatal("no fresh session")
					}
					token, ck = shown, fresh
				})
			}
		}
	}
}

// TestTokenPagesIsolateTheirWindow: the signup's token page, like the
// rotation's and the recreate's (TestNewTokenOnlyToANavigation), opens in
// a browsing context group of its own, cannot be framed and is never
// stored.
func TestTokenPagesIsolateTheirWindow(t *testing.T) {
	_, in := warmStart(t)
	resp, _ := in.do(t, req{method: "POST", path: "/users", form: url.Values{"user": {"alice"}},
		header: withHeaders(in.origin(), navigation, map[string]string{"Accept": "text/html"})})
	resp, page, token := in.tokenView(t, resp)
	if resp.StatusCode != http.StatusOK || token == "" {
		t.Fatalf("signup page: %d %s", resp.StatusCode, page)
	}
	checkPage(t, resp, page)
	if got := resp.Header.Get("Cross-Origin-Opener-Policy"); got != "same-origin" {
		t.Errorf("signup token page Cross-Origin-Opener-Policy %q, want same-origin", got)
	}
}

// TestLogoutFromAnotherSiteRefused: a cross-site form posted to /logout
// carries no session cookie (SameSite=Lax), but must not get
// Clear-Site-Data either, which in path routing wipes every agent's
// storage on the origin. A logout that names no origin at all (an API
// client) still works.
func TestLogoutFromAnotherSiteRefused(t *testing.T) {
	_, in := warmStart(t)
	_, ck := in.signupJSON(t, "alice")
	for _, tc := range []struct {
		name    string
		cookies []*http.Cookie
		header  map[string]string
		code    int
	}{
		{"no cookie, cross-site Origin", nil, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"no cookie, null Origin", nil, map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"no cookie, cross-site Referer", nil, map[string]string{"Referer": "https://evil.example/page"}, http.StatusForbidden},
		{"no cookie, cross-site browser form", nil, map[string]string{"Origin": "https://evil.example", "Accept": "text/html", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"cookie, cross-site Origin", []*http.Cookie{ck}, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"cookie, no Origin or Referer", []*http.Cookie{ck}, nil, http.StatusForbidden},
		{"no cookie, no Origin or Referer", nil, nil, http.StatusNoContent},
		{"no cookie, same origin", nil, in.origin(), http.StatusNoContent},
		{"no cookie, same-origin Referer", nil, map[string]string{"Referer": in.http.URL + "/"}, http.StatusNoContent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rq := req{method: "POST", path: "/logout", cookies: tc.cookies, header: tc.header}
			if tc.header["Accept"] == "text/html" {
				rq.form = url.Values{}
			}
			resp, body := in.do(t, rq)
			if resp.StatusCode != tc.code {
				t.Fatalf("logout: %d %s, want %d", resp.StatusCode, body, tc.code)
			}
			csd := resp.Header.Get("Clear-Site-Data")
			if tc.code == http.StatusForbidden && (csd != "" || cookie(resp, DefaultCookieName) != nil) {
				t.Errorf("a refused logout still clears site data %q or the cookie", csd)
			}
			if tc.code != http.StatusForbidden && csd != clearSiteData {
				t.Errorf("logout Clear-Site-Data %q", csd)
			}
		})
	}
	resp, _ := in.do(t, req{method: "GET", path: "/", cookies: []*http.Cookie{ck}})
	if c := cookie(resp, DefaultCookieName); c != nil && c.MaxAge < 0 {
		t.Error("a refused logout ended the session")
	}
}
