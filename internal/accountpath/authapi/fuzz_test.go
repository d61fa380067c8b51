package authapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandgate/sandgate/internal/account"
	"github.com/sandgate/sandgate/internal/jwt"
)

// FuzzInspect feeds arbitrary operator input to `jwt inspect`: it never
// panics, always gives a known verdict, and says valid only for a token the
// ring signed.
func FuzzInspect(f *testing.F) {
	ring := jwt.NewKeyRing(time.Now())
	signer, err := jwt.NewSigner(jwt.SignerOptions{KeyRing: ring, Issuer: DefaultIssuer, Audience: DefaultAudience})
	if err != nil {
		f.Fatal(err)
	}
	good, _ := signer.Sign(jwt.Claims{User: "alice", Epoch: 1})
	legit := map[string]bool{good: true}
	for _, s := range []string{
		good, DefaultCookieName + "=" + good, "Cookie: a=b; __Host-" + DefaultCookieName + "=" + good,
		"Set-Cookie: " + DefaultCookieName + "=" + good + "; Path=/; HttpOnly", `"` + good + `"`,
		"", "a.b.c", "e30.e30.", "eyJhbGciOiJub25lIn0.e30.", ";;==;", "Cookie:", strings.Repeat(".", 3),
	} {
		f.Add(s)
	}
	known := map[string]bool{VerdictValid: true, VerdictExpired: true, VerdictBadSignature: true, VerdictUnknownKID: true,
		VerdictRevoked: true, VerdictMalformed: true, VerdictInvalidClaims: true}
	f.Fuzz(func(t *testing.T, raw string) {
		rep := Inspect(context.Background(), raw, InspectOptions{Keys: ring})
		if !known[rep.Verdict] {
			t.Fatalf("unknown verdict %q", rep.Verdict)
		}
		if rep.Valid() && !legit[TokenFromInput(raw)] {
			t.Fatalf("valid verdict for a token the ring never signed: %q", raw)
		}
	})
}

// fuzzServer is a Server with just enough set up to read signups.
func fuzzServer() *Server {
	o := Options{InviteCode: "inv", MaxBodyBytes: 4096, AuthProxyHeader: "X-Forwarded-User"}.withDefaults()
	o.Logger = slog.New(slog.DiscardHandler)
	return &Server{opts: o, log: o.Logger}
}

// FuzzSignupInput feeds arbitrary bodies, content types, user names and
// headers to the signup reader: it never panics, never fails with a server
// error, and accepts only valid user names with the right invite.
func FuzzSignupInput(f *testing.F) {
	seeds := []struct{ ct, body, sso string }{
		{"application/json", `{"user":"alice","invite":"inv"}`, ""},
		{"application/json", `{"user":"Bob","invite":"inv"}`, ""},
		{"application/json", `{"user":5}`, ""},
		{"application/json", `{"user":"alice","invite":"inv"} {}`, ""},
		{"application/json; charset=utf-8", ` `, ""},
		{"application/x-www-form-urlencoded", "user=alice&invite=inv", ""},
		{"application/x-www-form-urlencoded", "user=%zz&invite=inv", ""},
		{"application/x-www-form-urlencoded", "user=admin&invite=inv", ""},
		{"multipart/form-data; boundary=x", "--x\r\nContent-Disposition: form-data; name=\"user\"\r\n\r\nalice\r\n--x--\r\n", ""},
		{"text/plain", "user=alice", ""},
		{"", "", "alice"},
		{"application/json", `{"user":"bob","invite":"inv"}`, "Alice"},
		{"application/json", `{"user":"` + strings.Repeat("a", 600) + `","invite":"inv"}`, ""},
	}
	for _, s := range seeds {
		f.Add(s.ct, s.body, s.sso)
	}
	s := fuzzServer()
	f.Fuzz(func(t *testing.T, ct, body, sso string) {
		r := httptest.NewRequest("POST", "/users", strings.NewReader(body))
		if ct != "" {
			r.Header.Set("Content-Type", ct)
		}
		if sso != "" && !strings.ContainsAny(sso, "\r\n") {
			r.Header.Set("X-Forwarded-User", sso)
		}
		_, user, err := s.readSignup(httptest.NewRecorder(), r)
		if err != nil {
			if code, _, msg := statusOf(err); code >= 500 || msg == "" {
				t.Fatalf("error %v maps to %d %q", err, code, msg)
			}
			return
		}
		if account.ValidateUser(user) != nil {
			t.Fatalf("accepted invalid user %q", user)
		}
		if !strings.Contains(body, "inv") {
			t.Fatalf("accepted %q without the invite", body)
		}
		if int64(len(body)) > s.opts.MaxBodyBytes {
			t.Fatalf("accepted a %d-byte body", len(body))
		}
	})
}

// TestSignupInputSeedsAsTable runs the fuzz seeds' expectations
// explicitly, so plain `go test` checks them.
func TestSignupInputSeedsAsTable(t *testing.T) {
	s := fuzzServer()
	cases := []struct {
		ct, body, sso string
		user          string
		code          int
	}{
		{"application/json", `{"user":"alice","invite":"inv"}`, "", "alice", 0},
		{"application/x-www-form-urlencoded", "user=alice&invite=inv", "", "alice", 0},
		{"application/json", `{"user":"alice"}`, "", "", http.StatusForbidden},
		{"application/json", `{"user":"Bob","invite":"inv"}`, "", "", http.StatusBadRequest},
		{"application/json", `{"user":5}`, "", "", http.StatusBadRequest},
		{"text/plain", "user=alice", "", "", http.StatusUnsupportedMediaType},
		{"application/json", `{"invite":"inv"}`, "Alice", "alice", 0},
		{"application/json", `{"user":"bob","invite":"inv"}`, "alice", "", http.StatusForbidden},
		{"application/json", strings.Repeat(" ", 5000), "", "", http.StatusRequestEntityTooLarge},
	}
	for i, tc := range cases {
		r := httptest.NewRequest("POST", "/users", strings.NewReader(tc.body))
		r.Header.Set("Content-Type", tc.ct)
		if tc.sso != "" {
			r.Header.Set("X-Forwarded-User", tc.sso)
		}
		_, user, err := s.readSignup(httptest.NewRecorder(), r)
		code := 0
		if err != nil {
			code, _, _ = statusOf(err)
		}
		if user != tc.user || code != tc.code {
			t.Errorf("case %d: user %q code %d (%v), want %q %d", i, user, code, err, tc.user, tc.code)
		}
	}
}

// FuzzAccountQuery: the admin list's query either is refused or names a
// known state (any case), a page from 1 and at most maxPerPage a page.
func FuzzAccountQuery(f *testing.F) {
	for _, q := range []string{"", "state=Ready&q=al&page=2&per_page=50", "state=asleep", "page=0", "per_page=100000", "q=%00", "page=-1&per_page=x"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		q, err := accountQueryOf(v)
		if err != nil {
			return
		}
		if q.Page < 1 || q.PerPage < 1 || q.PerPage > maxPerPage || len(q.Search) > maxFieldLen ||
			q.State != "" && !slices.ContainsFunc(allStates, func(s string) bool { return strings.EqualFold(s, q.State) }) {
			t.Fatalf("accepted %q as %+v", raw, q)
		}
	})
}
