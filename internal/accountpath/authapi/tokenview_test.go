package authapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandgate/sandgate/internal/account"
)

// TestSignupFormShowsTheTokenOnlyInItsOwnResponse: a browser's signup is
// answered 303 to the token view with the token sealed in a short-lived,
// HttpOnly, SameSite=Strict cookie scoped to the view; the view, on
// another replica too, shows it once (no-store, COOP) and clears the cookie; a reload
// says it was shown once (410) and what to do if it is lost. A script's
// fetch of the view is refused and spends nothing; the cookie opens only
// for its own user; the landing page never shows the token.
func TestSignupFormShowsTheTokenOnlyInItsOwnResponse(t *testing.T) {
	e := newEnv(t)
	e.warm(t)
	a, b := e.start(t, nil), e.start(t, nil)
	resp, _ := a.do(t, req{method: "POST", path: "/users", form: url.Values{"user": {"carol"}}, header: a.origin()})
	ck := cookie(resp, tokenCookieBase)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/users/carol/token" || ck == nil {
		t.Fatalf("form signup: %d, Location %q, cookies %v; want 303 to the token view with its cookie", resp.StatusCode, resp.Header.Get("Location"), resp.Cookies())
	}
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/users/carol/token" || ck.MaxAge <= 0 || ck.MaxAge > int(tokenViewTTL/time.Second) {
		t.Errorf("token cookie %+v: want HttpOnly, SameSite=Strict, the view's path, at most %v", ck, tokenViewTTL)
	}
	sess := cookie(resp, DefaultCookieName)
	c, err := e.claims.Get(t.Context(), "dsh-carol", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := account.Account{TokenHash: mustHash(t, c.Annotations[account.AnnotationTokenHash])}

	for _, fetch := range []map[string]string{
		{"Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"},
		{"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe"},
	} {
		r, body := b.do(t, req{method: "GET", path: "/users/carol/token", cookies: []*http.Cookie{ck}, header: withHeaders(fetch, map[string]string{"Accept": "application/json"})})
		if r.StatusCode != http.StatusForbidden || cookie(r, tokenCookieBase) != nil || tokenOf(body) != "" {
			t.Errorf("view by %v: %d, cookies %v; want 403, the cookie kept", fetch, r.StatusCode, r.Cookies())
		}
	}
	if r, page := b.do(t, req{method: "GET", path: "/users/dave/token", cookies: []*http.Cookie{ck}, header: navigation}); r.StatusCode != http.StatusGone || tokenOf(page) != "" {
		t.Errorf("carol's cookie at dave's view: %d; want 410 and no token", r.StatusCode)
	}

	view, page, token := b.tokenView(t, resp)
	checkPage(t, view, page)
	if view.StatusCode != http.StatusOK || token == "" || !owner.TokenMatches(token) {
		t.Fatalf("token view on another replica: %d, token %q; want the account's token", view.StatusCode, token)
	}
	if strings.Contains(ck.Value, token) || view.Header.Get("Cross-Origin-Opener-Policy") != "same-origin" || !strings.Contains(page, `href="/u/carol/"`) {
		t.Errorf("token view: cookie holds the token in clear, or no COOP, or no link on to the agent")
	}
	if gone := cookie(view, tokenCookieBase); gone == nil || gone.MaxAge >= 0 {
		t.Errorf("the view does not clear its cookie: %v", gone)
	}

	reload, page := a.do(t, req{method: "GET", path: "/users/carol/token", cookies: []*http.Cookie{sess}, header: navigation})
	checkPage(t, reload, page)
	if reload.StatusCode != http.StatusGone || strings.Contains(page, token) || !strings.Contains(page, "This token was shown once") ||
		!strings.Contains(page, "replace it on your account page") || !strings.Contains(page, `href="/"`) {
		t.Errorf("reload of the view: %d %s", reload.StatusCode, page)
	}
	if _, landing := a.do(t, req{method: "GET", path: "/", cookies: []*http.Cookie{sess}}); strings.Contains(landing, token) {
		t.Error("the landing page shows the token")
	}
}

// TestTokenCookieRefusesTampering: a sealed token opens only unchanged,
// for its user, under its own replica set's key, before it expires.
func TestTokenCookieRefusesTampering(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	view, err := tokenViewCipher(make([]byte, flashKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	other, err := tokenViewCipher([]byte(strings.Repeat("k", flashKeyBytes)))
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{opts: Options{Now: func() time.Time { return now }}, keys: &keyStore{}}
	s.keys.state.Store(&keyState{view: view})
	ck, err := s.tokenCookie("carol", "the-token")
	if err != nil {
		t.Fatal(err)
	}
	flipped := []byte(ck.Value)
	flipped[len(flipped)/2] ^= 1
	for _, tc := range []struct {
		name, user, value string
		at                time.Time
		key               *keyState
		want              string
	}{
		{"as sealed", "carol", ck.Value, now, nil, "the-token"},
		{"another user", "dave", ck.Value, now, nil, ""},
		{"flipped bit", "carol", string(flipped), now, nil, ""},
		{"not base64", "carol", "%%%", now, nil, ""},
		{"truncated", "carol", ck.Value[:8], now, nil, ""},
		{"expired", "carol", ck.Value, now.Add(tokenViewTTL), nil, ""},
		{"another key", "carol", ck.Value, now, &keyState{view: other}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.opts.Now = func() time.Time { return tc.at }
			if tc.key != nil {
				s.keys.state.Store(tc.key)
				defer s.keys.state.Store(&keyState{view: view})
			}
			r, _ := http.NewRequest(http.MethodGet, "http://gw.example/users/"+tc.user+"/token", nil)
			r.AddCookie(&http.Cookie{Name: tokenCookieBase, Value: tc.value})
			got, ok := s.openTokenCookie(r, tc.user)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("openTokenCookie = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}
