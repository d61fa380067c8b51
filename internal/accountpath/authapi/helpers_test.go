package authapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func mustJSON(t *testing.T, body string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("decode %q: %v", body, err)
	}
}

// tokenView follows a browser form's 303 to the token view as the browser
// would (a navigation, with the view's cookie) and returns the view's
// answer and the token it shows.
func (in *instance) tokenView(t *testing.T, resp *http.Response) (view *http.Response, page, token string) {
	t.Helper()
	loc := resp.Header.Get("Location")
	ck := cookie(resp, tokenCookieBase)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/users/") || ck == nil {
		t.Fatalf("want 303 to the token view with its cookie: %d, Location %q, cookies %v", resp.StatusCode, loc, resp.Cookies())
	}
	view, page = in.do(t, req{method: "GET", path: loc, cookies: []*http.Cookie{ck}, header: navigation})
	return view, page, tokenOf(page)
}

// tokenOf is the token a token view shows, or "".
func tokenOf(page string) string {
	return between(page, `<pre aria-describedby="token-copy">`, "</pre>")
}
