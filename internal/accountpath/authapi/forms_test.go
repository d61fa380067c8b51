package authapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestRefusedFormsKeepTheirInput: a browser's refused signup or sign-in
// form comes back as the landing page with the status the API gives the
// refusal, the name typed (never the token or the invite code), the
// reason in words beside its field (aria-describedby, role=alert) and,
// for sign-in, its deep link; a taken name is also filled into the
// sign-in form. API clients keep their JSON answers.
func TestRefusedFormsKeepTheirInput(t *testing.T) {
	e := newEnv(t)
	e.warm(t)
	in := e.start(t, func(o *Options) { o.InviteCode = "the-invite" })
	inv := map[string]string{"X-Signup-Invite": "the-invite"}
	resp, body := in.do(t, req{method: "POST", path: "/users", json: `{"user":"bob"}`, header: inv})
	var bob accountResponse
	mustJSON(t, body, &bob)
	token := bob.Token
	if resp.StatusCode/100 != 2 || token == "" {
		t.Fatalf("signup bob: %d %s", resp.StatusCode, body)
	}
	for _, tc := range []struct {
		name      string
		path      string
		form      url.Values
		code      int
		want      []string
		forbidden []string
	}{
		{"invalid name", "/users", url.Values{"user": {"Alice"}, "invite": {"the-invite"}}, http.StatusBadRequest,
			[]string{`value="Alice"`, `aria-invalid="true"`, `aria-describedby="signup-user-rule signup-user-error"`, `id="signup-user-error" class="error" role="alert">User names are lowercase: “alice” would do.`, `title="` + userRule + `"`},
			[]string{"invalid user name"}},
		{"reserved name", "/users", url.Values{"user": {"admin"}, "invite": {"the-invite"}}, http.StatusBadRequest,
			[]string{`value="admin"`, "“admin” is reserved for the service itself"}, nil},
		{"name taken", "/users", url.Values{"user": {"bob"}, "invite": {"the-invite"}}, http.StatusConflict,
			[]string{`name="user" value="bob"`, "The name “bob” is taken. If it is yours, sign in below", `<input name="user" value="bob" required maxlength="40" autocomplete="username"`},
			[]string{"user already exists"}},
		{"wrong invite", "/users", url.Values{"user": {"carol"}, "invite": {"not-the-invite"}}, http.StatusForbidden,
			[]string{`value="carol"`, `id="signup-invite-error"`, "That invite code is not valid"},
			[]string{"not-the-invite"}},
		{"wrong token", "/login", url.Values{"user": {"bob"}, "token": {"wrong-token"}, "next": {"/u/bob/some/page?x=1"}}, http.StatusUnauthorized,
			[]string{`<input name="user" value="bob"`, `id="signin-token-error" class="error" role="alert">This user name and access token do not open an account`, `name="next" value="/u/bob/some/page?x=1"`, "<h1>Sign up or sign in</h1>"},
			[]string{"wrong-token", "invalid user or token", "Sign in required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, page := in.do(t, req{method: "POST", path: tc.path, form: tc.form, header: in.origin()})
			checkPage(t, resp, page)
			if resp.StatusCode != tc.code {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.code)
			}
			for _, want := range tc.want {
				if !strings.Contains(page, want) {
					t.Errorf("page lacks %s", want)
				}
			}
			for _, bad := range tc.forbidden {
				if strings.Contains(page, bad) {
					t.Errorf("page shows %q", bad)
				}
			}
		})
	}

	if resp, body := in.do(t, req{method: "POST", path: "/users", json: `{"user":"bob"}`, header: inv}); resp.StatusCode != http.StatusConflict || strings.TrimSpace(body) != `{"error":"user already exists: log in with your token"}` {
		t.Errorf("JSON signup of a taken name: %d %s", resp.StatusCode, body)
	}
	if resp, body := in.do(t, req{method: "POST", path: "/login", json: `{"user":"bob","token":"wrong"}`}); resp.StatusCode != http.StatusUnauthorized || strings.TrimSpace(body) != `{"error":"invalid user or token"}` {
		t.Errorf("JSON login with a wrong token: %d %s", resp.StatusCode, body)
	}

	for next, to := range map[string]string{
		"/u/bob/some/page?x=1":  "/u/bob/some/page?x=1",
		"//evil.example/x":      "/u/bob/",
		"https://evil.example/": "/u/bob/",
		"":                      "/u/bob/",
	} {
		resp, _ := in.do(t, req{method: "POST", path: "/login", form: url.Values{"user": {"bob"}, "token": {token}, "next": {next}}, header: in.origin()})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != to {
			t.Errorf("sign-in with next %q: %d to %q, want 303 to %q", next, resp.StatusCode, resp.Header.Get("Location"), to)
		}
	}
	for next, carried := range map[string]bool{"/u/bob/some/page?x=1": true, "//evil.example/": false} {
		_, page := in.do(t, req{method: "GET", path: "/?next=" + url.QueryEscape(next)})
		if got := strings.Contains(page, `<input type="hidden" name="next" value="`+next+`">`); got != carried {
			t.Errorf("landing page with next %q carries it: %v, want %v", next, got, carried)
		}
	}
}

// TestErrorPagesShareTheMessageLayout: the auth API's error pages are
// webpage.Message pages, titled in words, with no machine message.
func TestErrorPagesShareTheMessageLayout(t *testing.T) {
	_, in := warmStart(t)
	html := map[string]string{"Accept": "text/html"}
	for _, tc := range []struct {
		name string
		rq   req
		code int
		want string
	}{
		{"bad URL", req{method: "GET", path: "/no-such-page", header: html}, http.StatusNotFound, "<title>Page not found</title>"},
		{"no session", req{method: "POST", path: "/recreate", form: url.Values{}, header: in.origin()}, http.StatusUnauthorized, "<title>Sign in required</title>"},
		{"cross-site form", req{method: "POST", path: "/login", form: url.Values{"user": {"x"}}, header: map[string]string{"Origin": "http://evil.example"}}, http.StatusForbidden, "<title>Request refused</title>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, page := in.do(t, tc.rq)
			checkPage(t, resp, page)
			if resp.StatusCode != tc.code || !strings.Contains(page, tc.want) || !strings.Contains(page, `<p class="muted">sandgate</p>`) || !strings.Contains(page, `<nav aria-label="Next steps">`) {
				t.Errorf("%d %s", resp.StatusCode, page)
			}
			for _, machine := range []string{">not found<", "not logged in", "cross-origin request refused"} {
				if strings.Contains(page, machine) {
					t.Errorf("page shows the machine message %q", machine)
				}
			}
		})
	}
}

// TestUserAdvice: each way a name breaks the rules gets its own words.
func TestUserAdvice(t *testing.T) {
	for name, want := range map[string]string{
		"":                      "Enter a user name.",
		strings.Repeat("a", 41): "That name has 41 characters, more than 40.",
		"Alice":                 "User names are lowercase: “alice” would do.",
		"erin smith":            "A user name can only have lowercase letters (a to z), digits and hyphens: no spaces, dots, capitals or other signs.",
		"al.ice":                "A user name can only have lowercase letters (a to z), digits and hyphens: no spaces, dots, capitals or other signs.",
		"1alice":                "A user name starts with a letter (a to z).",
		"-alice":                "A user name starts with a letter (a to z).",
		"alice-":                "A user name ends with a letter or a digit, not a hyphen.",
		"admin":                 "“admin” is reserved for the service itself: choose another name.",
	} {
		if got := userAdvice(name); got != want {
			t.Errorf("userAdvice(%q) = %q, want %q", name, got, want)
		}
	}
}
